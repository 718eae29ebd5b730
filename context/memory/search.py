"""Full-text search over memory records: FTS5 BM25 on pre-tokenized text, with filters.

Columns are weighted (content 1.0, files 0.8, tags 0.5, surrounding context 0.3), so a record that
*says* the query outranks one that merely sits next to it. Ties break on newer turn, then newer id,
so the same database state always gives the same order.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from ctxagent.context.memory.record import COLUMNS, Record
from ctxagent.context.memory.text import Synonyms, build_match

WEIGHTS = (1.0, 0.5, 0.8, 0.3)  # content, tags, files, context — the order of records_fts columns


def norm_path(path: str) -> str:
    p = path.replace("\\", "/").strip()
    while p.startswith("./"):
        p = p[2:]
    return p


def _filters(
    layer: str | None,
    type_: str | Sequence[str] | None,
    file: str | None,
    turns: tuple[int, int] | None,
    include_superseded: bool,
    session: str | None = None,
    pinned: bool | None = None,
    status: str | None = None,
) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    if not include_superseded:
        where.append("r.superseded_by IS NULL")
    if layer:
        where.append("r.layer = ?")
        params.append(layer)
    if type_:
        types = [type_] if isinstance(type_, str) else list(type_)
        where.append(f"r.type IN ({','.join('?' * len(types))})")
        params.extend(types)
    if turns is not None:
        where.append("r.turn BETWEEN ? AND ?")
        params.extend([int(turns[0]), int(turns[1])])
    if file:
        f = norm_path(file)
        where.append("r.id IN (SELECT record_id FROM record_files WHERE path = ? OR name = ? OR path LIKE ?)")
        params.extend([f, f, "%/" + f])
    if session is not None:
        where.append("r.session = ?")
        params.append(session)
    if pinned is not None:
        where.append("r.pinned = ?")
        params.append(1 if pinned else 0)
    if status is not None:
        where.append("r.status = ?")
        params.append(status)
    return where, params


def search_records(
    conn: sqlite3.Connection,
    query: str,
    *,
    synonyms: Synonyms | None = None,
    layer: str | None = None,
    type_: str | Sequence[str] | None = None,
    file: str | None = None,
    turns: tuple[int, int] | None = None,
    limit: int = 8,
    include_superseded: bool = False,
    match: str | None = None,
) -> list[Record]:
    """Records matching `query` (or a ready FTS5 `match` expression), best first.

    An empty query (nothing searchable in it) lists the filtered records, newest first.
    """
    where, params = _filters(layer, type_, file, turns, include_superseded)
    expr = match if match is not None else build_match(query, synonyms)
    cols = ", ".join(f"r.{c.strip()}" for c in COLUMNS.split(","))
    if not expr:
        sql = f"SELECT {cols} FROM records r"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY r.turn DESC, r.id DESC LIMIT ?"
        return [Record.from_row(row) for row in conn.execute(sql, [*params, int(limit)])]
    weights = ", ".join(str(w) for w in WEIGHTS)
    sql = (
        f"SELECT {cols}, bm25(records_fts, {weights}) AS rank FROM records_fts "
        "JOIN records r ON r.id = records_fts.rowid WHERE records_fts MATCH ?"
    )
    if where:
        sql += " AND " + " AND ".join(where)
    sql += " ORDER BY rank, r.turn DESC, r.id DESC LIMIT ?"
    try:
        rows = conn.execute(sql, [expr, *params, int(limit)]).fetchall()
    except sqlite3.OperationalError:  # a MATCH expression FTS5 rejects: nothing found, not a crash
        return []
    return [Record.from_row(row[:-1], score=round(-float(row[-1]), 6)) for row in rows]


def list_records(
    conn: sqlite3.Connection,
    *,
    layer: str | None = None,
    type_: str | Sequence[str] | None = None,
    file: str | None = None,
    turns: tuple[int, int] | None = None,
    include_superseded: bool = True,
    session: str | None = None,
    pinned: bool | None = None,
    status: str | None = None,
    limit: int | None = None,
    newest_first: bool = False,
) -> list[Record]:
    where, params = _filters(layer, type_, file, turns, include_superseded, session, pinned, status)
    cols = ", ".join(f"r.{c.strip()}" for c in COLUMNS.split(","))
    sql = f"SELECT {cols} FROM records r"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY r.id DESC" if newest_first else " ORDER BY r.id"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(int(limit))
    return [Record.from_row(row) for row in conn.execute(sql, params)]
