"""Hybrid memory search: BM25 (FTS5) and embedding similarity, fused by reciprocal rank.

Each side ranks a pool of candidates under the same filters; a record's fused score is
    LEXICAL_WEIGHT / (RRF_K + its BM25 rank) + VECTOR_WEIGHT / (RRF_K + its similarity rank)
(a side that did not rank it adds nothing). Reciprocal-rank fusion needs no calibration between
BM25 scores and cosines, so the same constants hold on a 50-record project and a 100k one. Ties
break like BM25's: newer turn, then newer id — the same state always gives the same order.

The constants were chosen on LoCoMo conv-26 and conv-30 only (RRF_K 5/10/20/30/60 × vector weight
0.6–2.0; docs/BENCHMARKS.md §4); the other three conversations were not looked at until the end.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ctxagent.context.memory.embed import Embedder, VectorIndex
from ctxagent.context.memory.record import COLUMNS, Record
from ctxagent.context.memory.search import _filters, search_records
from ctxagent.context.memory.terms import Synonyms, query_units

RRF_K = 10            # small: the first few ranks of either side decide
LEXICAL_WEIGHT = 1.0
VECTOR_WEIGHT = 0.8
POOL_MIN = 50  # candidates per side: enough that a record ranked low by one side can be lifted by the other


def hybrid_search(conn: sqlite3.Connection, index: VectorIndex, embedder: Embedder, query: str, *,
                  synonyms: Synonyms | None = None, layer: str | None = None,
                  type_: str | Sequence[str] | None = None, file: str | None = None,
                  turns: tuple[int, int] | None = None, limit: int = 8, include_superseded: bool = False) -> list[Record]:
    pool = max(POOL_MIN, 4 * int(limit))
    lexical = search_records(conn, query, synonyms=synonyms, layer=layer, type_=type_, file=file, turns=turns,
                             limit=pool, include_superseded=include_superseded)
    if not query_units(query, synonyms):  # nothing to search for: the lexical side lists newest first
        return lexical[:limit]
    where, params = _filters(layer, type_, file, turns, include_superseded)
    allowed = {int(r[0]) for r in conn.execute("SELECT r.id FROM records r" + (" WHERE " + " AND ".join(where) if where else ""),
                                                params)}
    index.refresh(conn)
    semantic = index.nearest(embedder.query(query), allowed, pool)
    score: dict[int, float] = {}
    for rank, rec in enumerate(lexical):
        score[rec.id] = score.get(rec.id, 0.0) + LEXICAL_WEIGHT / (RRF_K + rank + 1)
    for rank, rid in enumerate(semantic):
        score[rid] = score.get(rid, 0.0) + VECTOR_WEIGHT / (RRF_K + rank + 1)
    if not score:
        return []
    known = {r.id: r for r in lexical}
    missing = [rid for rid in score if rid not in known]
    if missing:
        cols = ", ".join(f"r.{c.strip()}" for c in COLUMNS.split(","))
        for row in conn.execute(f"SELECT {cols} FROM records r WHERE r.id IN ({','.join('?' * len(missing))})", missing):
            known[int(row[0])] = Record.from_row(row)
    ranked = sorted((rid for rid in score if rid in known), key=lambda rid: (-score[rid], -known[rid].turn, -rid))
    out: list[Record] = []
    for rid in ranked[:limit]:
        rec = known[rid]
        rec.score = round(score[rid], 6)
        out.append(rec)
    return out
