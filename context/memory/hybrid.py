"""Hybrid memory search: BM25 (FTS5) and embedding similarity, fused by reciprocal rank.

Each side ranks a pool of candidates under the same filters; a record's fused score is
    LEXICAL_WEIGHT / (RRF_K + its BM25 rank) + VECTOR_WEIGHT / (RRF_K + its similarity rank)
(a side that did not rank it adds nothing). Reciprocal-rank fusion needs no calibration between
BM25 scores and cosines, so the same constants hold on a 50-record project and a 100k one. Ties
break like BM25's: newer turn, then newer id — the same state always gives the same order.

Two floors keep weak matches out (issue 24: "Decimal" found "hello" five times): the lexical side
keeps what passes search.py's relevance floor, and a nearest vector — one always exists — brings in
a record that side did not find only when it is more similar to the query, by VECTOR_MARGIN, than
the most similar of a fixed set of everyday sentences in both languages (vectors.UNRELATED). A
fixed cosine cannot be the floor: this model puts unrelated pairs at 0.75–0.85, two Chinese texts
higher than an English and a Chinese one, so the query's own similarity to text about nothing
is what the record must clear.

The vector pass is skipped when BM25 is decisive: it found at least `limit` hits, and its best
holds every unit of the query (the query's own, not their synonyms) and scores at least
DECISIVE_RATIO times its hit at rank `limit`. Then the order is BM25's, and no query vector is needed
— which is what a search costs most with the model installed.
A query already embedded (asked before: the warm block asks at every step) has its vectors scored on
a thread while BM25 runs, and thrown away when BM25 is decisive: the same answer, in about the time
of the slower pass when a core is free (docs/BENCHMARKS.md §3).

RRF_K and the weights were chosen on LoCoMo conv-26 and conv-30 only (RRF_K 5/10/20/30/60 × vector
weight 0.6–2.0; docs/BENCHMARKS.md §4); so were search.py's RELEVANCE_FLOOR and MAX_QUERY_UNITS,
VECTOR_MARGIN, DECISIVE_RATIO and POOL_PER_HIT (`python -m ctxagent.tui.lab.bench.locomo_fit`: each
floor as high as no lower one costs recall@10 there, the lowest ratio, term cap and pool that cost
none either; the pool per hit asked for, 1–4: under 4 costs recall there). On the held-out conv-41,
42 and 43 recall@10 (categories 1–4) with them: BM25 0.6967, hybrid 0.7282 (0.7005 and 0.7291 with
no term cap; docs/BENCHMARKS.md §3).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ctxagent.context.language.terms import Synonyms
from ctxagent.context.memory.fts_tokens import units_per_row
from ctxagent.context.memory.record import COLUMNS, Record
from ctxagent.context.memory.search import _filters, cached_query_units, relevant, search_records
from ctxagent.context.memory.vectors import VectorIndex

RRF_K = 10            # small: the first few ranks of either side decide
LEXICAL_WEIGHT = 1.0
VECTOR_WEIGHT = 0.8
# candidates per side, per hit asked for: enough that a record ranked low by one side can be lifted by the other
POOL_PER_HIT = 4.0  # fitted on LoCoMo conv-26/30 (locomo_fit.py); was max(50, 4 × limit): 50 at limit 8
VECTOR_MARGIN = 0.03  # how much more similar than unrelated text a record no query term matched must be
DECISIVE_RATIO = 6.0  # BM25 alone when its best hit holds the whole query and outscores rank `limit` this much


def pool_size(limit: int) -> int:
    return max(int(limit), round(POOL_PER_HIT * int(limit)))


def decisive(conn: sqlite3.Connection, lexical: list[Record], query_terms: list[list[str]], limit: int) -> bool:
    """BM25's answer stands without the vector pass (see the module doc); `query_terms`: the query's
    own units, without their synonyms."""
    if not query_terms or len(lexical) < limit:  # fewer than asked for: the vector side may add some
        return False
    top, last = lexical[0].score or 0.0, lexical[limit - 1].score or 0.0
    if not (last > 0 and top >= DECISIVE_RATIO * last):
        return False
    return units_per_row(conn, query_terms, [lexical[0].id]).get(lexical[0].id, 0) == len(query_terms)


def fuse(lexical: list[Record], semantic: list[tuple[int, float]], floor: float | None = None) -> dict[int, float]:
    """Record id -> fused score: reciprocal-rank fusion of the lexical records and the (id, similarity)
    nearest ones; a vector-only record under `floor` is left out (the others keep their ranks)."""
    score: dict[int, float] = {}
    found = {r.id for r in lexical}
    for rank, rec in enumerate(lexical):
        score[rec.id] = score.get(rec.id, 0.0) + LEXICAL_WEIGHT / (RRF_K + rank + 1)
    for rank, (rid, sim) in enumerate(semantic):
        if rid in found or floor is None or sim >= floor:
            score[rid] = score.get(rid, 0.0) + VECTOR_WEIGHT / (RRF_K + rank + 1)
    return score


def vector_floor(query_vec: Any, unrelated: Any) -> float | None:
    """The similarity a record needs to come in by meaning alone (see the module doc)."""
    if unrelated is None or not len(unrelated):
        return None
    import numpy as np

    return float(np.max(unrelated @ np.asarray(query_vec, dtype=np.float32))) + VECTOR_MARGIN


# one thread scoring the vectors beside SQLite's BM25 (numpy and SQLite release the GIL), per process:
# a forked child (bench replay --jobs) inherits the executor but not its thread, and would wait forever
_AHEAD: dict[int, ThreadPoolExecutor] = {}


def _ahead() -> ThreadPoolExecutor:
    pid = os.getpid()
    if pid not in _AHEAD:
        _AHEAD.clear()
        _AHEAD[pid] = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctxagent-memory-vectors")
    return _AHEAD[pid]


def hybrid_search(conn: sqlite3.Connection, index: VectorIndex, query_vector: Callable[[str], Any], query: str, *,
                  unrelated: Any = None, synonyms: Synonyms | None = None, layer: str | None = None,
                  type_: str | Sequence[str] | None = None, file: str | None = None,
                  turns: tuple[int, int] | None = None, limit: int = 8, include_superseded: bool = False,
                  known_vector: Callable[[str], Any] | None = None) -> list[Record]:
    """Records matching `query`, best first; `query_vector(text)` embeds the query (when it is needed),
    `unrelated` holds the vectors of vectors.UNRELATED (None: no floor on the vector side).
    `known_vector(text)`: the query's vector when it is already embedded, else None. Then the vectors
    are scored on a thread while BM25 runs (the same scores as after it; thrown away when BM25 is
    decisive), so a repeated question costs about the slower of the two passes, not their sum; a
    query not yet embedded is embedded only when BM25 is not decisive."""
    pool = pool_size(limit)
    units = cached_query_units(query, synonyms)
    early = known_vector(query) if units and known_vector is not None else None
    ahead: Future[tuple[Any, Any]] | None = None
    if early is not None:
        index.refresh(conn)
        ahead = _ahead().submit(index.scores, early, pool)
    try:
        lexical = search_records(conn, query, synonyms=synonyms, layer=layer, type_=type_, file=file, turns=turns,
                                 limit=pool, include_superseded=include_superseded, units=units)
        if not units:  # nothing to search for: the lexical side lists newest first
            return lexical[:limit]
        own = cached_query_units(query, None)  # the query's own units, without their synonyms
        lexical = relevant(lexical, conn, own)
        if decisive(conn, lexical, own, limit):
            semantic: list[tuple[int, float]] = []
        else:
            where, params = _filters(layer, type_, file, turns, include_superseded)

            def allowed(ids: list[int]) -> set[int]:
                sql = f"SELECT r.id FROM records r WHERE r.id IN ({','.join('?' * len(ids))})"
                return {int(r[0]) for r in conn.execute(sql + "".join(f" AND {w}" for w in where), [*ids, *params])}

            if ahead is None:
                index.refresh(conn)
                qvec = query_vector(query)
            else:
                qvec = early
            floor = vector_floor(qvec, unrelated)
            semantic = index.nearest(qvec, pool, allowed if where else None,
                                     scored=ahead.result() if ahead is not None else None)
    finally:
        if ahead is not None:
            ahead.result()  # the index is never touched by two threads: its scoring is done before we return
    score = fuse(lexical, semantic, floor if semantic else None)
    known = {r.id: r for r in lexical}
    missing = [rid for rid in score if rid not in known]
    if missing:
        cols = ", ".join(f"r.{c.strip()}" for c in COLUMNS.split(","))
        for row in conn.execute(f"SELECT {cols} FROM records r WHERE r.id IN ({','.join('?' * len(missing))})", missing):
            known[int(row[0])] = Record.from_row(row)
    # a record forgotten since its vector was read is not in `known`
    ranked = sorted((rid for rid in score if rid in known), key=lambda rid: (-score[rid], -known[rid].turn, -rid))
    out: list[Record] = []
    for rid in ranked[:limit]:
        rec = known[rid]
        rec.score = round(score[rid], 6)
        out.append(rec)
    return out
