"""The SQLite memory database: typed records, merge and supersede, aging, lexical (BM25) search.

The database alone. What the product opens is `MemoryStore` (context/memory/__init__.py): this
database at the project's or the user's path, plus ingest from the session log and hybrid search
with the optional embedding model. stdlib sqlite3 in WAL mode with a busy timeout, and every write in
a `BEGIN IMMEDIATE` transaction, so the agent, the MCP server and the CLI can write the same file at
once without losing a write. Nothing is deleted except by `forget`.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from ctxagent.context.errors import MemoryStoreError
from ctxagent.context.floor.sanitize import escape_surrogates
from ctxagent.context.language import provenance as provenance_rules, rules
from ctxagent.context.language.terms import (
    Synonyms,
    config_synonyms,
    index_text,
    normalize,
    query_units,
)
from ctxagent.context.memory.dbfile import create_private, sqlite_problem
from ctxagent.context.memory.lifecycle import RecordLifecycle, stored_text
from ctxagent.context.memory.record import COLUMNS, LAYERS, RETIRED, TODO_STATUSES, TYPES, Record
from ctxagent.context.memory.schema import SCHEMA_VERSION, migrate
from ctxagent.context.memory.search import list_records, norm_path, search_records
from ctxagent.context.memory.term_df import backfill_term_df, bump_df, record_terms

DEFAULT_DEGRADE_AFTER_TURNS = 20
BUSY_TIMEOUT_MS = 30_000
USER_TEXT_CHARS = 20_000  # of one user turn, kept for matching
USER_TEXTS_KEPT = 500  # user turns a constraint is matched against
DEFAULT_IMPORTANCE = {"constraint": 0.9, "decision": 0.8, "todo": 0.7, "change": 0.5, "note": 0.4, "summary": 0.3, "spill": 0.2,
                      "turn": 0.2}


class MemoryDB(RecordLifecycle):
    """Typed memory records in SQLite. Thread-safe; several processes may share the file."""

    def __init__(self, conn: sqlite3.Connection, path: Path | None, *, synonyms: Synonyms | None = None,
                 degrade_after_turns: int = DEFAULT_DEGRADE_AFTER_TURNS, scope: str = "project"):
        self.conn = conn
        self.path = path
        self.synonyms = synonyms or Synonyms()
        self.degrade_after_turns = degrade_after_turns
        self.scope = scope
        self._lock = threading.RLock()
        self._depth = 0  # open `_write` blocks of the thread holding the lock: inner ones are savepoints

    # ----------------------------------------------------------------- opening

    @classmethod
    def open(cls, path: str | Path, *, synonyms: Iterable[Iterable[str]] | None = None,
             degrade_after_turns: int = DEFAULT_DEGRADE_AFTER_TURNS, scope: str = "project",
             **options: Any) -> Self:
        """Open (creating and migrating) the database at `path`; ":memory:" for a throwaway one.

        Extra synonym groups come from `synonyms` and from `synonyms = [[...], ...]` in a
        `config.toml` beside the database (i.e. `.ctxagent/config.toml`). `options` go to the
        constructor of `cls` (MemoryStore's `embeddings`).
        """
        in_memory = str(path) == ":memory:"
        db_path = None if in_memory else Path(path)
        groups = [list(g) for g in synonyms or []]
        if db_path is not None:
            create_private(db_path)
            groups += config_synonyms(db_path.parent / "config.toml")
        try:
            conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise MemoryStoreError(f"cannot open memory database {path}: {sqlite_problem(exc)}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if not in_memory:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            migrate(conn)
            backfill_term_df(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise MemoryStoreError(f"cannot open memory database {path}: {sqlite_problem(exc)}") from exc
        return cls(conn, db_path, synonyms=Synonyms(groups), degrade_after_turns=degrade_after_turns, scope=scope,
                   **options)

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def revision(self) -> tuple[int, int, int]:
        """Changes whenever what a read could return may have changed: a row this connection wrote
        (any table, so it is conservative), a commit by another connection to the same file, or new
        synonyms. Equal revisions: every read gives what it gave before (the recall memo keys on it)."""
        with self._lock:
            version = int(self.conn.execute("PRAGMA data_version").fetchone()[0])
            return self.conn.total_changes, version, self.synonyms.version if self.synonyms is not None else 0

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; inside another one (a batch, such as an ingest), a savepoint of it:
        what fails inside is undone alone, and the batch commits once."""
        with self._lock:
            if self._depth:
                name = f"w{self._depth}"
                self.conn.execute(f"SAVEPOINT {name}")
                self._depth += 1
                try:
                    yield self.conn
                except BaseException:
                    self.conn.execute(f"ROLLBACK TO {name}")
                    self.conn.execute(f"RELEASE {name}")
                    raise
                finally:
                    self._depth -= 1
                self.conn.execute(f"RELEASE {name}")
                return
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise MemoryStoreError(f"memory database is busy or unwritable: {exc}") from exc
            self._depth = 1
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            finally:
                self._depth = 0
            self.conn.execute("COMMIT")

    # ------------------------------------------------------------------ writes

    def add(self, content: str, type: str = "note", *, layer: str = "warm", tags: Sequence[str] = (),
            files: Sequence[str] = (), session: str = "", turn: int = 0, importance: float | None = None,
            pinned: bool | None = None, status: str | None = None, source_events: Sequence[int] = (),
            context: str = "", merge: bool = True, supersede: bool = True, provenance: str = provenance_rules.USER,
            user_texts: Sequence[str] | None = None, said_at: float | None = None) -> int:
        """Write a record and return its id — the id of the existing record when it merges into one.

        `provenance` says who wrote it (this API is the user's — the CLI, /remember — unless a caller
        says otherwise). Constraints are pinned and todos open unless said otherwise, but a
        constraint not written by the user is pinned only if it matches what the user typed
        (`user_texts`, default: this store's record of the user's turns) — see provenance.py.
        See `rules` for merge and supersede. `said_at` (epoch seconds) is when its source was said,
        kept as `created_at`; default: now.
        """
        if provenance not in provenance_rules.PROVENANCES:
            raise MemoryStoreError(f"unknown provenance {provenance!r}")
        provenance = provenance_rules.Author.of(provenance).value  # a legacy spelling as its author
        content = stored_text(" ".join(str(content).split()) if "\n" not in str(content) else str(content).strip())
        context = stored_text(str(context))
        if not content:
            raise MemoryStoreError("a memory record needs content")
        if type not in TYPES:
            raise MemoryStoreError(f"unknown record type {type!r}; expected one of {', '.join(TYPES)}")
        if layer not in LAYERS:
            raise MemoryStoreError(f"unknown layer {layer!r}; expected one of {', '.join(LAYERS)}")
        if status is not None and status not in TODO_STATUSES:
            raise MemoryStoreError(f"unknown status {status!r}; expected one of {', '.join(TODO_STATUSES)}")
        files = [norm_path(escape_surrogates(f)) for f in files if f]
        tags = [stored_text(str(t)) for t in tags if str(t).strip()]
        wants_pin = type == "constraint" if pinned is None else bool(pinned)
        if wants_pin:
            wants_pin = provenance_rules.may_pin(provenance, content, self._heard(user_texts), type)
        with self._write() as conn:
            if merge:
                existing = self._find_duplicate(conn, content, type)
                if existing is not None:
                    self._merge_into(conn, existing, tags, files, session, turn, source_events)
                    if provenance == provenance_rules.USER and existing.provenance != provenance_rules.USER:
                        # the user said it too: it is theirs now, and binds like anything they said
                        conn.execute("UPDATE records SET provenance = ?, pinned = ? WHERE id = ?",
                                     (provenance, int(existing.pinned or wants_pin), existing.id))
                    return existing.id
            now = time.time()
            cur = conn.execute(
                "INSERT INTO records (layer, type, content, tags, files, session, turn, last_turn, created_at, "
                "updated_at, confirmations, importance, superseded_by, source_events, pinned, status, context, norm, "
                "provenance) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, NULL, ?, ?, ?, ?, ?, ?)",
                (layer, type, content, json.dumps(tags, ensure_ascii=False), json.dumps(files, ensure_ascii=False),
                 session, int(turn), int(turn), now if not said_at else float(said_at), now,
                 DEFAULT_IMPORTANCE[type] if importance is None else float(importance),
                 json.dumps([int(e) for e in source_events]), int(wants_pin),
                 status if status is not None else ("open" if type == "todo" else None), context, normalize(content),
                 provenance),
            )
            rid = int(cur.lastrowid or 0)
            conn.execute(
                "INSERT INTO records_fts (rowid, content, tags, files, context) VALUES (?, ?, ?, ?, ?)",
                (rid, index_text(content), index_text(" ".join(tags)), index_text(" ".join(files)), index_text(context)),
            )
            conn.executemany(
                "INSERT INTO record_files (record_id, path, name) VALUES (?, ?, ?)",
                [(rid, f, f.rsplit("/", 1)[-1]) for f in dict.fromkeys(files)],
            )
            bump_df(conn, record_terms(content, tags, files, context), +1)
            if supersede and type in rules.SUPERSEDABLE:
                self._auto_supersede(conn, rid)
            return rid

    def _find_duplicate(self, conn: sqlite3.Connection, content: str, type_: str) -> Record | None:
        row = conn.execute(f"SELECT {COLUMNS} FROM records WHERE type = ? AND norm = ? ORDER BY superseded_by IS NOT NULL, id DESC LIMIT 1",
                           (type_, normalize(content))).fetchone()
        if row is not None:
            return Record.from_row(row)
        for cand in search_records(conn, content, type_=type_, limit=5, include_superseded=True):
            if rules.near_duplicate(content, cand.content):
                return cand
        return None

    def _merge_into(self, conn: sqlite3.Connection, rec: Record, tags: list[str], files: list[str], session: str,
                    turn: int, source_events: Sequence[int]) -> None:
        new_tags = list(dict.fromkeys([*rec.tags, *tags]))
        new_files = list(dict.fromkeys([*rec.files, *files]))
        sources = list(dict.fromkeys([*rec.source_events, *(int(e) for e in source_events)])) if session == rec.session else rec.source_events
        last_turn = max(rec.last_turn, int(turn)) if session == rec.session else rec.last_turn
        if rec.layer == RETIRED:  # taken back by a rewind, said again since: current again, first said now
            sources = [int(e) for e in source_events]
            last_turn = int(turn)
            conn.execute("UPDATE records SET turn = ?, session = ? WHERE id = ?", (int(turn), session, rec.id))
        conn.execute(
            "UPDATE records SET confirmations = confirmations + 1, updated_at = ?, tags = ?, files = ?, source_events = ?, "
            "last_turn = ?, layer = CASE WHEN layer = ? OR ? > last_turn THEN 'warm' ELSE layer END WHERE id = ?",
            (time.time(), json.dumps(new_tags, ensure_ascii=False), json.dumps(new_files, ensure_ascii=False),
             json.dumps(sources), last_turn, RETIRED, last_turn, rec.id),
        )
        added = record_terms("", [t for t in new_tags if t not in rec.tags], [f for f in new_files if f not in rec.files], "")
        bump_df(conn, added - record_terms(rec.content, rec.tags, rec.files, rec.context), +1)
        for f in new_files:
            if f not in rec.files:
                conn.execute("INSERT INTO record_files (record_id, path, name) VALUES (?, ?, ?)", (rec.id, f, f.rsplit("/", 1)[-1]))
        if new_tags != rec.tags or new_files != rec.files:
            conn.execute("UPDATE records_fts SET tags = ?, files = ? WHERE rowid = ?",
                         (index_text(" ".join(new_tags)), index_text(" ".join(new_files)), rec.id))
        # Said again after it was superseded: the repeat is the newest word, so it is current again.
        # (Within a session "after" means a later turn than the record that replaced it; a restatement
        # from a compaction summary carries an old turn and revives nothing.)
        if rec.superseded_by is not None:
            winner = self._get(conn, rec.superseded_by)
            if winner is not None and winner.current:
                later = int(turn) > winner.last_turn if session == winner.session else bool(session)
                if later:
                    conn.execute("UPDATE records SET superseded_by = NULL WHERE id = ?", (rec.id,))
                    conn.execute("UPDATE records SET superseded_by = ? WHERE id = ?", (rec.id, winner.id))

    def _auto_supersede(self, conn: sqlite3.Connection, rid: int) -> None:
        new = self._get(conn, rid)
        assert new is not None
        units = query_units(new.content, None)
        candidates = search_records(conn, new.content, type_=new.type, limit=25, units=units) if units else []
        for f in new.files:
            candidates += search_records(conn, "", type_=new.type, file=f, limit=25)
        seen: set[int] = set()
        for old in candidates:
            if old.id == rid or old.id in seen or not old.current:
                continue
            seen.add(old.id)
            if not rules.same_subject(new.type, new.content, old.content, new.files, old.files):
                continue
            if not rules.may_supersede(new, old):
                continue  # e.g. the model's constraint never replaces one the user wrote
            # Turns order statements within a session; across sessions the later write is newer.
            newer = (old.last_turn, old.id) <= (new.last_turn, new.id) if old.session == new.session else old.id < new.id
            if newer:
                conn.execute("UPDATE records SET superseded_by = ? WHERE id = ?", (rid, old.id))
            else:  # an older statement arriving late (e.g. from a compaction summary) is born superseded
                conn.execute("UPDATE records SET superseded_by = ? WHERE id = ?", (old.id, rid))
                return

    def record_user_text(self, session: str, event_id: int, turn: int, text: str) -> None:
        """Keep what the user typed in a turn: a constraint written by anyone else binds only if it
        matches one of these (provenance.said_by_user)."""
        with self._write() as conn:
            conn.execute("INSERT OR IGNORE INTO user_texts (session, event_id, turn, text) VALUES (?, ?, ?, ?)",
                         (session, int(event_id), int(turn), stored_text(str(text))[:USER_TEXT_CHARS]))

    def user_texts(self, limit: int = USER_TEXTS_KEPT) -> list[str]:
        """The user's most recent turns (any session), newest first."""
        with self._lock:
            rows = self.conn.execute("SELECT text FROM user_texts ORDER BY id DESC LIMIT ?", (int(limit),)).fetchall()
        return [str(r[0]) for r in rows]

    def _heard(self, given: Sequence[str] | None) -> Iterator[str]:
        """`given`, or this store's record of the user's turns, read only when iterated: the pin rule
        reads them only for a constraint someone else wrote."""
        yield from (self.user_texts() if given is None else given)

    # ------------------------------------------------------------------- reads

    def _get(self, conn: sqlite3.Connection, id: int) -> Record | None:
        row = conn.execute(f"SELECT {COLUMNS} FROM records WHERE id = ?", (int(id),)).fetchone()
        return Record.from_row(row) if row else None

    def get(self, id: int) -> Record | None:
        with self._lock:
            return self._get(self.conn, id)

    @property
    def retrieval(self) -> str:
        """How this store searches (`memory stats`); MemoryStore says whether embeddings join in."""
        return "BM25"

    def lexical_search(self, query: str, layer: str | None = None, type: str | Sequence[str] | None = None,
                       file: str | None = None, turns: tuple[int, int] | None = None, limit: int = 8,
                       include_superseded: bool = False) -> list[Record]:
        """Records matching `query` by BM25 (FTS5), best first (see search.py)."""
        with self._lock:
            return search_records(self.conn, query, synonyms=self.synonyms, layer=layer, type_=type, file=file,
                                  turns=turns, limit=limit, include_superseded=include_superseded)

    def list(self, type: str | Sequence[str] | None = None, layer: str | None = None, *, status: str | None = None,
             session: str | None = None, pinned: bool | None = None, file: str | None = None,
             include_superseded: bool = True, limit: int | None = None, newest_first: bool = False) -> list[Record]:
        with self._lock:
            return list_records(self.conn, layer=layer, type_=type, file=file, include_superseded=include_superseded,
                                session=session, pinned=pinned, status=status, limit=limit, newest_first=newest_first)

    def stats(self) -> dict[str, Any]:
        current = "superseded_by IS NULL AND layer != ?"
        with self._lock:
            q = self.conn.execute
            by_type = dict(q("SELECT type, COUNT(*) FROM records GROUP BY type ORDER BY type").fetchall())
            by_layer = dict(q("SELECT layer, COUNT(*) FROM records GROUP BY layer ORDER BY layer").fetchall())
            total = int(q("SELECT COUNT(*) FROM records").fetchone()[0])
            return {
                "path": str(self.path) if self.path else ":memory:",
                "scope": self.scope,
                "schema_version": SCHEMA_VERSION,
                "total": total,
                "by_type": by_type,
                "by_layer": by_layer,
                "superseded": int(q("SELECT COUNT(*) FROM records WHERE superseded_by IS NOT NULL").fetchone()[0]),
                "retired": int(q("SELECT COUNT(*) FROM records WHERE layer = ?", (RETIRED,)).fetchone()[0]),
                # what recall shows as binding: current (not superseded, not retired by a rewind)
                "pinned": int(q(f"SELECT COUNT(*) FROM records WHERE type = 'constraint' AND pinned = 1 AND {current}",
                                (RETIRED,)).fetchone()[0]),
                "open_todos": int(q(f"SELECT COUNT(*) FROM records WHERE type = 'todo' AND status = 'open' AND {current}",
                                    (RETIRED,)).fetchone()[0]),
                "ingested_events": int(q("SELECT COUNT(*) FROM ingested").fetchone()[0]),
                "retrieval": self.retrieval,
                "vectors": int(q("SELECT COUNT(*) FROM record_vectors").fetchone()[0]),
                "bytes": self.path.stat().st_size if self.path and self.path.exists() else 0,
            }
