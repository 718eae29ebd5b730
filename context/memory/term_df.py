"""Term document frequencies (`term_df`): how many records hold each (light-stemmed) term, kept up to
date on every write, so search can weigh rare words above common ones without scanning the index."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from ctxagent.context.language.terms import stem, terms


def record_terms(content: str, tags: Sequence[str], files: Sequence[str], context: str) -> set[str]:
    """The record's distinct terms as `term_df` keys (light-stemmed, close to what porter merges in FTS5)."""
    found = set(terms(content)) | set(terms(" ".join(tags))) | set(terms(" ".join(files))) | set(terms(context))
    return {stem(t) for t in found}


def bump_df(conn: sqlite3.Connection, found: set[str], delta: int) -> None:
    if not found:
        return
    conn.executemany(
        "INSERT INTO term_df (term, df) VALUES (?, ?) ON CONFLICT(term) DO UPDATE SET df = MAX(0, df + excluded.df)",
        [(t, delta) for t in sorted(found)],
    )


def backfill_term_df(conn: sqlite3.Connection) -> None:
    """Count term document frequencies for records written before schema 2 (once per database)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'term_df_backfill'").fetchone()
    if not row or row[0] != "pending":
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'term_df_backfill'").fetchone()
        if row and row[0] == "pending":
            counts: dict[str, int] = {}
            for content, tags, files, context in conn.execute("SELECT content, tags, files, context FROM records"):
                for t in record_terms(content, json.loads(tags), json.loads(files), context):
                    counts[t] = counts.get(t, 0) + 1
            conn.execute("DELETE FROM term_df")
            conn.executemany("INSERT INTO term_df (term, df) VALUES (?, ?)", sorted(counts.items()))
            conn.execute("UPDATE meta SET value = 'done' WHERE key = 'term_df_backfill'")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
