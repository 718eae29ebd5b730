"""What happens to a memory record after it is written: its context grows, a newer one supersedes it,
it ages from warm to cold, a rewind retires it, the user forgets it — and its history, read back.
The base of MemoryDB (context/memory/store.py), which owns the connection and the write lock."""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import AbstractContextManager

from ctxagent.context.errors import MemoryStoreError
from ctxagent.context.floor.sanitize import escape_surrogates, redact_secrets
from ctxagent.context.language.provenance import TOOL
from ctxagent.context.language.terms import index_text
from ctxagent.context.memory.record import COLUMNS, RETIRED, TODO_STATUSES, Record
from ctxagent.context.memory.term_df import bump_df, record_terms


def stored_text(text: str) -> str:
    """What may be stored: no secret of a known shape, nothing sqlite cannot encode."""
    return redact_secrets(escape_surrogates(text))


class RecordLifecycle:
    conn: sqlite3.Connection
    degrade_after_turns: int
    _lock: threading.RLock

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError  # MemoryDB's: the write transaction under the store's lock

    def _get(self, conn: sqlite3.Connection, id: int) -> Record | None:
        raise NotImplementedError  # MemoryDB's: one record by id

    def extend_context(self, id: int, text: str) -> None:
        """Append `text` to a record's searchable context (e.g. the reply that followed a turn)."""
        text = " ".join(str(text).split())
        if not text:
            return
        with self._write() as conn:
            rec = self._get(conn, id)
            if rec is None:
                raise MemoryStoreError(f"no memory record {id}")
            context = stored_text(f"{rec.context} {text}".strip())
            before = record_terms(rec.content, rec.tags, rec.files, rec.context)
            conn.execute("UPDATE records SET context = ?, updated_at = ? WHERE id = ?", (context, time.time(), id))
            conn.execute("UPDATE records_fts SET context = ? WHERE rowid = ?", (index_text(context), id))
            bump_df(conn, record_terms(rec.content, rec.tags, rec.files, context) - before, +1)

    def supersede(self, old_id: int, new_id: int) -> None:
        """Mark `old_id` as replaced by `new_id` (explicit: no shared subject needed)."""
        if old_id == new_id:
            raise MemoryStoreError("a record cannot supersede itself")
        with self._write() as conn:
            for rid in (old_id, new_id):
                if self._get(conn, rid) is None:
                    raise MemoryStoreError(f"no memory record {rid}")
            conn.execute("UPDATE records SET superseded_by = ?, updated_at = ? WHERE id = ?", (new_id, time.time(), old_id))

    def forget(self, id: int) -> bool:
        """Delete a record for good (the one deletion there is). Records it superseded become current again."""
        with self._write() as conn:
            rec = self._get(conn, id)
            if rec is not None:
                bump_df(conn, record_terms(rec.content, rec.tags, rec.files, rec.context), -1)
            gone = conn.execute("DELETE FROM records WHERE id = ?", (id,)).rowcount
            conn.execute("DELETE FROM records_fts WHERE rowid = ?", (id,))
            conn.execute("DELETE FROM record_files WHERE record_id = ?", (id,))
            conn.execute("UPDATE records SET superseded_by = NULL WHERE superseded_by = ?", (id,))
            return bool(gone)

    def retire_after(self, session: str, turn: int, *, code_only: bool = False) -> int:
        """Retire what `session` first wrote in turn `turn` or later: a rewind to before `turn` took
        those turns back, so their changes, decisions and test results are no longer true. With
        `code_only` (a rewind of the code alone: the conversation stays), only what described the code
        goes — the change records and the test results the tools reported.

        Nothing is deleted: retired records stay listed, but search and recall skip them, and the
        records they had superseded are current again. Said again later, a record revives (see
        `_merge_into`). Returns how many records were retired.
        """
        code = f" AND (type = 'change' OR (type = 'note' AND provenance = '{TOOL}'))" if code_only else ""
        with self._write() as conn:
            ids = [int(r[0]) for r in conn.execute(
                f"SELECT id FROM records WHERE session = ? AND turn >= ? AND layer != ?{code}", (session, int(turn), RETIRED))]
            if not ids:
                return 0
            marks = ",".join("?" * len(ids))
            conn.execute(f"UPDATE records SET layer = ?, updated_at = ? WHERE id IN ({marks})", (RETIRED, time.time(), *ids))
            conn.execute(f"UPDATE records SET superseded_by = NULL WHERE superseded_by IN ({marks})", ids)
            return len(ids)

    def set_status(self, id: int, status: str) -> None:
        if status not in TODO_STATUSES:
            raise MemoryStoreError(f"unknown status {status!r}")
        with self._write() as conn:
            conn.execute("UPDATE records SET status = ?, updated_at = ? WHERE id = ?", (status, time.time(), id))

    def age(self, current_turn: int, session: str | None = None) -> int:
        """Move warm records not said for `degrade_after_turns` turns to cold; return how many moved.

        Pinned constraints and open todos never age: they are recalled every step. With `session`,
        records of other sessions count as older than this session's turn 1.
        """
        limit = int(current_turn) - self.degrade_after_turns
        if limit <= 0:
            return 0
        keep = "pinned = 0 AND NOT (type = 'todo' AND status = 'open')"
        with self._write() as conn:
            if session is None:
                cur = conn.execute(f"UPDATE records SET layer = 'cold' WHERE layer = 'warm' AND {keep} AND last_turn < ?", (limit,))
            else:
                cur = conn.execute(
                    f"UPDATE records SET layer = 'cold' WHERE layer = 'warm' AND {keep} AND (session != ? OR last_turn < ?)",
                    (session, limit),
                )
            return int(cur.rowcount)

    def history(self, id: int) -> list[Record]:
        """The chain of records `id` replaced and that replaced it, oldest first."""
        with self._lock:
            chain: list[Record] = []
            rec = self._get(self.conn, id)
            while rec is not None and rec.id not in {r.id for r in chain}:
                chain.append(rec)
                rec = self._get(self.conn, rec.superseded_by) if rec.superseded_by is not None else None
            older = [Record.from_row(r) for r in self.conn.execute(f"SELECT {COLUMNS} FROM records WHERE superseded_by = ? ORDER BY id", (id,))]
            return sorted({r.id: r for r in older + chain}.values(), key=lambda r: (r.last_turn, r.id))

