"""The memory database's schema, as versioned migrations keyed by PRAGMA user_version.

A migration is applied once, in order, inside one IMMEDIATE transaction, so two processes opening
a fresh database at the same moment cannot both migrate it. Never edit a released migration:
append a new one.
"""

from __future__ import annotations

import sqlite3

from ctxagent.context.errors import MemoryStoreError

MIGRATIONS: list[str] = [
    # 1: records, their files, their full-text index, and which log events were already ingested.
    """
    CREATE TABLE records (
        id             INTEGER PRIMARY KEY,
        layer          TEXT NOT NULL DEFAULT 'warm',          -- warm | cold
        type           TEXT NOT NULL,                         -- decision|constraint|change|todo|note|summary|spill
        content        TEXT NOT NULL,
        tags           TEXT NOT NULL DEFAULT '[]',            -- JSON list
        files          TEXT NOT NULL DEFAULT '[]',            -- JSON list
        session        TEXT NOT NULL DEFAULT '',
        turn           INTEGER NOT NULL DEFAULT 0,            -- first said
        last_turn      INTEGER NOT NULL DEFAULT 0,            -- last said (merges); aging and supersede use it
        created_at     REAL NOT NULL,
        updated_at     REAL NOT NULL,
        confirmations  INTEGER NOT NULL DEFAULT 1,
        importance     REAL NOT NULL DEFAULT 0.5,
        superseded_by  INTEGER,
        source_events  TEXT NOT NULL DEFAULT '[]',            -- JSON list of event ids in `session`
        pinned         INTEGER NOT NULL DEFAULT 0,
        status         TEXT,                                  -- todos: open | done
        context        TEXT NOT NULL DEFAULT '',              -- surrounding text, searched at low weight
        norm           TEXT NOT NULL DEFAULT ''               -- normalized content, for merging repeats
    );
    CREATE INDEX records_type_layer ON records(type, layer);
    CREATE INDEX records_norm ON records(type, norm);
    CREATE INDEX records_session_turn ON records(session, turn);
    CREATE INDEX records_superseded ON records(superseded_by);
    CREATE TABLE record_files (
        record_id INTEGER NOT NULL REFERENCES records(id) ON DELETE CASCADE,
        path      TEXT NOT NULL,
        name      TEXT NOT NULL
    );
    CREATE INDEX record_files_path ON record_files(path);
    CREATE INDEX record_files_name ON record_files(name);
    CREATE INDEX record_files_record ON record_files(record_id);
    CREATE VIRTUAL TABLE records_fts USING fts5(
        content, tags, files, context, tokenize = 'unicode61 remove_diacritics 2'
    );
    CREATE TABLE ingested (
        session  TEXT NOT NULL,
        event_id INTEGER NOT NULL,
        turn     INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (session, event_id)
    ) WITHOUT ROWID;
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    # 2: document frequency per index term, kept by the store on every write, so a search can tell a
    #    rare term from one in half the records without scanning posting lists (fts5vocab does scan).
    #    Filled for existing records by MemoryDB.open (needs the Python tokenizer).
    """
    CREATE TABLE term_df (term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
    CREATE INDEX records_type_pinned ON records(type, pinned);
    CREATE INDEX records_type_status ON records(type, status);
    INSERT OR REPLACE INTO meta (key, value) VALUES ('term_df_backfill', 'pending');
    """,
    # 3: who wrote each record (context/language/provenance.py), and what the user typed, which decides
    #    whether a constraint written by anyone else may be pinned. Constraints pinned before this
    #    stay pinned only where the user's words show: a /remember, `memory add`, or a sentence of
    #    the user text kept as the record's context; the rest become ordinary (unpinned) records.
    """
    ALTER TABLE records ADD COLUMN provenance TEXT NOT NULL DEFAULT '';
    CREATE TABLE user_texts (
        id       INTEGER PRIMARY KEY,
        session  TEXT NOT NULL,
        event_id INTEGER NOT NULL,
        turn     INTEGER NOT NULL DEFAULT 0,
        text     TEXT NOT NULL,
        UNIQUE (session, event_id)
    );
    UPDATE records SET provenance = 'user' WHERE type = 'constraint' AND pinned = 1 AND (
        session = 'cli' OR tags LIKE '%"remember"%' OR (context != '' AND instr(lower(context), lower(content)) > 0));
    UPDATE records SET pinned = 0 WHERE type = 'constraint' AND pinned = 1 AND provenance = '';
    """,
    # 4: one embedding per record, for hybrid search when the optional embedding model is installed
    #    (`ctxagent[embeddings]`, see embed.py). Derived data: written lazily, rebuilt when the model changes.
    """
    CREATE TABLE record_vectors (
        seq       INTEGER PRIMARY KEY AUTOINCREMENT,         -- grows on every write: readers top up by it
        record_id INTEGER NOT NULL UNIQUE REFERENCES records(id) ON DELETE CASCADE,
        model     TEXT NOT NULL,
        vec       BLOB NOT NULL                              -- float32, L2-normalized
    );
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the database to SCHEMA_VERSION; return the version it was at."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise MemoryStoreError(f"memory database is version {version}, newer than this ctxagent ({SCHEMA_VERSION})")
    if version == SCHEMA_VERSION:
        return version
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = int(conn.execute("PRAGMA user_version").fetchone()[0])  # another process may have won
        for number in range(current, SCHEMA_VERSION):
            for statement in _statements(MIGRATIONS[number]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number + 1}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return version


def _statements(script: str) -> list[str]:
    out: list[str] = []
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out
