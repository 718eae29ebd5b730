"""Full-text search over memory records: FTS5 BM25 on pre-tokenized text, with filters.

Columns are weighted (content 1.0, files 0.8, tags 0.5, surrounding context 0.5), so a record that
*says* the query outranks one that merely sits next to it — while a reply is still found by the
question before it (a turn's context is its neighbouring turns; 0.5 rather than 0.3 was chosen on
LoCoMo conv-26 and conv-30). Ties break on newer turn, then newer id,
so the same database state always gives the same order.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ctxagent.context.language.terms import Synonyms, match_of, query_units, stem
from ctxagent.context.memory.fts_tokens import units_held, units_per_row
from ctxagent.context.memory.record import COLUMNS, RETIRED, Record

WEIGHTS = (1.0, 0.5, 0.8, 0.5)  # content, tags, files, context — the order of records_fts columns


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
    if not include_superseded:  # what is no longer true: replaced by a newer record, or taken back by a rewind
        where.append("r.superseded_by IS NULL")
        where.append("r.layer != ?")
        params.append(RETIRED)
    if layer:
        where.append("r.layer = ?")
        params.append(layer)
    if type_:
        types = [type_] if isinstance(type_, str) else list(type_)
        where.append("r.type = ?" if len(types) == 1 else f"r.type IN ({','.join('?' * len(types))})")
        params.extend(types)
    if turns is not None:
        where.append("r.turn BETWEEN ? AND ?")
        params.extend([int(turns[0]), int(turns[1])])
    if file:
        f = norm_path(file)
        # `name` (the basename) is indexed: narrow by it first, then accept the path or a path suffix
        where.append("r.id IN (SELECT record_id FROM record_files WHERE name = ? AND (path = ? OR name = ? OR path LIKE ?))")
        params.extend([f.rsplit("/", 1)[-1], f, f, "%/" + f])
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


# A hit scoring under this share of the best hit's BM25 score, and holding fewer of the query's units
# than it, is no answer to the query (`relevant`).
RELEVANCE_FLOOR = 0.05  # fitted on LoCoMo conv-26/30 (tui/lab/bench/locomo_fit.py): higher ones cost recall there


def relevant(records: list[Record], conn: sqlite3.Connection | None = None,
             units: list[list[str]] | None = None) -> list[Record]:
    """The hits of a search worth showing. Each holds a query term (FTS5 finds nothing else); one
    that also scores under RELEVANCE_FLOOR of the best hit and holds fewer of the query's own `units`
    (its words, not their synonyms) than it is dropped — a one-word match of a long query under a hit that matches much of it. BM25
    scores are not normalised, so the floor is relative; and in a small store where the query's
    terms are in most records FTS5 clamps their weight to nearly 0, so the score alone would drop
    an equal match: the count of units held says it is one. A listing (no scores) is left as it is."""
    if not records or records[0].score is None:
        return records
    floor = RELEVANCE_FLOOR * records[0].score
    low = [r.id for r in records[1:] if r.score is None or r.score < floor]
    if not low:
        return records
    if conn is None or not units:
        drop = set(low)
    else:
        held = units_per_row(conn, units, [records[0].id, *low])
        best = held.get(records[0].id, len(units))
        drop = {rid for rid in low if held.get(rid, 0) < best}
    return [r for r in records if r.id not in drop]


# A query whose terms together match more than POSTING_BUDGET records is split (see `search_records`).
POSTING_BUDGET = 2000
RECENT_WINDOW = 1500
# A query keeps at most this many of the units the store holds, the rarest (`selective`): a long one
# (a task's 40 words and a file name, what recall asks) would OR thirty terms, and its common ones
# cost FTS5 a posting walk and a BM25 sum on every record holding them for almost no weight.
MAX_QUERY_UNITS = 5  # fitted on LoCoMo conv-26/30 (tui/lab/bench/locomo_fit.py): 3 and 4 cost recall there


@lru_cache(maxsize=512)
def _units(query: str, synonyms: Synonyms | None, version: int) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(u) for u in query_units(query, synonyms))


def cached_query_units(query: str, synonyms: Synonyms | None) -> list[list[str]]:
    """query_units(query, synonyms), remembered: the warm block asks the same question at every step of a
    turn, and a long user message costs milliseconds to split, stem and expand."""
    return [list(u) for u in _units(query, synonyms, synonyms.version if synonyms is not None else 0)]


def term_dfs(conn: sqlite3.Connection, terms: list[str]) -> dict[str, int]:
    """Document frequency per query term (keyed by its light stem, as the store counts them)."""
    keys = sorted({stem(t) for t in terms})
    if not keys:
        return {}
    rows = dict(conn.execute(f"SELECT term, df FROM term_df WHERE term IN ({','.join('?' * len(keys))})", keys).fetchall())
    return {t: int(rows.get(stem(t), 0)) for t in terms}


def selective(units: list[list[str]], unit_df: list[int]) -> tuple[list[list[str]], list[int]]:
    """`units` (and their document frequencies) without all but the MAX_QUERY_UNITS rarest of those the
    store holds; in the query's order. A unit no record holds (df 0) is kept: it costs FTS5 nothing,
    and the light stem the count is keyed on is not exactly FTS5's porter stem."""
    held = [i for i, df in enumerate(unit_df) if df > 0]
    if len(held) <= MAX_QUERY_UNITS:
        return units, unit_df
    keep = set(sorted(held, key=lambda i: (unit_df[i], i))[:MAX_QUERY_UNITS])
    idx = [i for i in range(len(units)) if unit_df[i] == 0 or i in keep]
    return [units[i] for i in idx], [unit_df[i] for i in idx]


def _run(conn: sqlite3.Connection, units: list[list[str]], where: list[str], params: list[Any], limit: int,
         min_rowid: int | None = None, indexed: bool = False) -> list[tuple[Any, ...]]:
    """Rows (record columns + bm25 rank), best first.

    Ranking inside FTS5 alone is cheap; joining every match to `records` (to filter) is what costs
    at 100k records. So: take the top candidates from FTS5, filter just those, and fall back to
    the exact join only when the filters rejected so many that the candidates ran out. When the
    filters are `indexed` (a type is given: records(type, layer)) and let at most as many records
    through as there would be candidates, the exact join goes first, over only the query units
    those records can hold (fts_tokens.py: the same scores): the warm block's recall, over a store
    of mostly cold turns, is this case at every step.
    """
    cols = ", ".join(f"r.{c.strip()}" for c in COLUMNS.split(","))
    weights = ", ".join(str(w) for w in WEIGHTS)
    rowid_cond = " AND rowid >= ?" if min_rowid is not None else ""
    rowid_arg = [min_rowid] if min_rowid is not None else []
    want = int(limit) * 4 + 16
    if indexed and where:
        few = [int(r[0]) for r in conn.execute(f"SELECT r.id FROM records r WHERE {' AND '.join(where)} LIMIT ?",
                                               [*params, want + 1])]
        if len(few) <= want:
            held = units_held(conn, units, few) if few else []
            return _exact(conn, cols, weights, match_of(held), rowid_cond, rowid_arg, where, params, limit) if held else []
    expr = match_of(units)
    try:
        cand = conn.execute(
            f"SELECT rowid, bm25(records_fts, {weights}) AS rank FROM records_fts WHERE records_fts MATCH ?{rowid_cond} "
            "ORDER BY rank, rowid DESC LIMIT ?", [expr, *rowid_arg, want]).fetchall()
    except sqlite3.OperationalError:  # a MATCH expression FTS5 rejects: nothing found, not a crash
        return []
    if not cand:
        return []
    rank = dict(cand)
    # the filter and the order need only id and turn; the whole record is read for the hits returned
    sql = f"SELECT r.id, r.turn FROM records r WHERE r.id IN ({','.join('?' * len(cand))})"
    if where:
        sql += " AND " + " AND ".join(where)
    keys = sorted(((rank[rid], -int(turn), -int(rid)) for rid, turn in conn.execute(sql, [*rank, *params])))
    if not (len(keys) >= limit or len(cand) < want):
        return _exact(conn, cols, weights, expr, rowid_cond, rowid_arg, where, params, limit)
    top = [-k[2] for k in keys[:limit]]
    if not top:
        return []
    full = {int(row[0]): row for row in conn.execute(
        f"SELECT {cols} FROM records r WHERE r.id IN ({','.join('?' * len(top))})", top)}
    return [(*full[rid], rank[rid]) for rid in top if rid in full]


def _exact(conn: sqlite3.Connection, cols: str, weights: str, expr: str, rowid_cond: str, rowid_arg: list[Any],
           where: list[str], params: list[Any], limit: int) -> list[tuple[Any, ...]]:
    """Every match joined to its record and filtered, then ranked: exact, and costly when many match."""
    sql = (f"SELECT {cols}, bm25(records_fts, {weights}) AS rank FROM records_fts "
           f"JOIN records r ON r.id = records_fts.rowid WHERE records_fts MATCH ?{rowid_cond.replace('rowid', 'records_fts.rowid')}")
    if where:
        sql += " AND " + " AND ".join(where)
    sql += " ORDER BY rank, r.turn DESC, r.id DESC LIMIT ?"
    try:
        return conn.execute(sql, [expr, *rowid_arg, *params, int(limit)]).fetchall()
    except sqlite3.OperationalError:  # a MATCH expression FTS5 rejects: nothing found
        return []


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
    units: list[list[str]] | None = None,
) -> list[Record]:
    """Records matching `query` (or ready query `units`), best first.

    An empty query (nothing searchable in it) lists the filtered records, newest first.

    Cost control: BM25 is computed for every record a query matches, so a query whose terms match
    tens of thousands of records would take tens of milliseconds. When the terms' summed document
    frequency exceeds POSTING_BUDGET, the query runs twice, cheaply: (1) the rarest terms that fit
    the budget over all records — rare terms carry almost all of BM25's weight — and (2) all terms
    over the RECENT_WINDOW newest records. Results merge by score. Small stores (every LoCoMo
    conversation, most projects) never split, so their ranking is exact. Before that, a query of
    more than MAX_QUERY_UNITS units the store holds keeps its rarest ones (`selective`).
    """
    where, params = _filters(layer, type_, file, turns, include_superseded)
    if units is None:
        units = cached_query_units(query, synonyms)
    if not units:
        cols = ", ".join(f"r.{c.strip()}" for c in COLUMNS.split(","))
        sql = f"SELECT {cols} FROM records r"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY r.turn DESC, r.id DESC LIMIT ?"
        return [Record.from_row(row) for row in conn.execute(sql, [*params, int(limit)])]
    dfs = term_dfs(conn, sorted({t for u in units for t in u}))
    # what a unit costs is every posting FTS5 walks: all of a phrase's terms ("log in" walks "in")
    unit_df = [sum(dfs.get(t, 0) for t in u) for u in units]
    units, unit_df = selective(units, unit_df)
    if sum(unit_df) <= POSTING_BUDGET:
        rows = _run(conn, units, where, params, limit, indexed=bool(type_))
    else:
        order = sorted(range(len(units)), key=lambda i: (unit_df[i], i))
        rare: list[list[str]] = []
        spent = 0
        for i in order:
            if rare and spent + unit_df[i] > POSTING_BUDGET:
                break
            rare.append(units[i])
            spent += unit_df[i]
        top = int(conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM records_fts").fetchone()[0])
        merged: dict[int, tuple[Any, ...]] = {}
        for row in _run(conn, rare, where, params, limit, indexed=bool(type_)) + _run(
            conn, units, where, params, limit, min_rowid=max(0, top - RECENT_WINDOW), indexed=bool(type_)
        ):
            if row[0] not in merged or row[-1] < merged[row[0]][-1]:
                merged[row[0]] = row
        rows = sorted(merged.values(), key=lambda r: (r[-1], -int(r[7]), -int(r[0])))[:limit]
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
