"""Fit the memory search's floors on LoCoMo's dev conversations, report them on the others.

    python -m ctxagent.tui.lab.bench.locomo_fit [--data locomo5.json] [--dev conv-26,conv-30]

Each conversation goes through the product's ingest and store exactly as `ctxagent bench locomo`
does; per question the lexical hits (search.py) and the nearest vectors (vectors.py) are taken
once, then recall@10 (categories 1–4) is scored for every value of the grids by the product's own
`hybrid.fuse` and `hybrid.decisive` — the constants are the module's, set in turn. What is chosen:
on the dev conversations, the highest floors up to which no floor costs more than TOLERANCE of the
recall@10 without it, and the lowest decisive ratio that costs no more either, the lexical floor first (under both modes), then the other two together (the floors keep noise out; they may not cost recall).
Then what a search costs, with those: the fewest query units (search.MAX_QUERY_UNITS) and the
smallest pool per hit (hybrid.POOL_PER_HIT) such that neither it nor any larger one costs more than
TOLERANCE of the largest's recall@10. The held-out conversations' numbers are printed for the chosen
values and for the modules' own.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ctxagent.context.floor.display import echo
from ctxagent.context.memory import MemoryStore, hybrid, search
from ctxagent.context.memory.search import cached_query_units, search_records
from ctxagent.tui.lab.bench.embed_memo import default_cache_path, memo_embedder
from ctxagent.tui.lab.bench.locomo import (
    conversation_turns,
    default_data_path,
    evidence_ids,
    load_conversations,
    session_events,
)

DEV = ("conv-26", "conv-30")
NEVER = float("inf")  # as a decisive ratio: the vector pass always runs
VECTOR_MARGINS = (-1.0, -0.03, -0.02, -0.01, 0.0, 0.01, 0.02, 0.03, 0.05, 0.08)  # -1: no floor
DECISIVE_RATIOS = (2.0, 3.0, 4.0, 6.0, 8.0, 12.0, NEVER)
RELEVANCE_FLOORS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3)
QUERY_UNIT_CAPS = (3, 4, 5, 6, 8, 10, 12, 16, 48)  # search.MAX_QUERY_UNITS; 48: as many as a query has
POOLS_PER_HIT = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0)  # hybrid.POOL_PER_HIT
TOLERANCE = 0.001  # under the share of one question's evidence on the dev set: no question lost
K = 10


@contextmanager
def constants(**values: float) -> Iterator[None]:
    """The hybrid / search module constants set to `values` for the block."""
    mods = {"VECTOR_MARGIN": hybrid, "DECISIVE_RATIO": hybrid, "POOL_PER_HIT": hybrid, "RELEVANCE_FLOOR": search,
            "MAX_QUERY_UNITS": search}
    old = {name: getattr(mods[name], name) for name in values}
    try:
        for name, v in values.items():
            setattr(mods[name], name, v)
        yield
    finally:
        for name, v in old.items():
            setattr(mods[name], name, v)


def conversation_cases(conv: dict[str, Any], embedder: Any) -> list[dict[str, Any]]:
    """Per question of categories 1–4: what fusion needs, taken once."""
    turns = conversation_turns(conv)
    known = {t.dia_id for t in turns}
    store = MemoryStore.open(":memory:", embedder=embedder)
    logs, dia = session_events(turns)
    for session, events in logs.items():
        store.ingest(events, session)
    store.wait_for_vectors()
    store.embed_new()
    store.search("warm up")  # loads the index
    index = store._vectors
    assert index is not None
    index.refresh(store.conn)
    records = {r.id: r for r in store.list(include_superseded=True)}
    unrelated = store._queries.unrelated(embedder.passages) if store._queries is not None else None
    cases = []
    limit = 2 * K
    with constants(POOL_PER_HIT=max(POOLS_PER_HIT)):
        pool = hybrid.pool_size(limit)
    for qa in conv.get("qa") or []:
        good = [x for x in evidence_ids(qa) if x in known]
        if not good or str(qa.get("category")) not in ("1", "2", "3", "4"):
            continue
        q = str(qa.get("question", ""))
        lexical = {}
        for cap in QUERY_UNIT_CAPS:  # the lexical side per term cap; each pool is a prefix of the widest
            with constants(MAX_QUERY_UNITS=cap):
                lexical[cap] = search_records(store.conn, q, synonyms=store.synonyms, limit=pool)
        qvec = embedder.query(q)
        semantic = index.nearest(qvec, pool)
        cases.append({"good": good, "lexical": lexical, "semantic": semantic, "units": cached_query_units(q, None),
                      "qvec": qvec, "unrelated": unrelated,
                      "conn": store.conn, "records": records, "dia": dia})
    return cases


def recall(cases: list[dict[str, Any]], hybrid_on: bool) -> float:
    hits = []
    limit = 2 * K
    pool = hybrid.pool_size(limit)
    for c in cases:
        lexical = search.relevant(c["lexical"][search.MAX_QUERY_UNITS][:pool], c["conn"], c["units"])
        skip = hybrid.DECISIVE_RATIO != NEVER and hybrid.decisive(c["conn"], lexical, c["units"], limit)
        if hybrid_on and not skip:
            score = hybrid.fuse(lexical, c["semantic"][:pool], hybrid.vector_floor(c["qvec"], c["unrelated"]))
        else:
            score = hybrid.fuse(lexical, [])
        recs = c["records"]
        ranked = sorted((rid for rid in score if rid in recs), key=lambda rid: (-score[rid], -recs[rid].turn, -rid))[:limit]
        found: dict[str, None] = {}
        for rid in ranked:
            r = recs[rid]
            for ev in r.source_events:
                if (r.session, ev) in c["dia"]:
                    found.setdefault(c["dia"][(r.session, ev)], None)
        got = set(list(found)[:K])
        hits.append(len(got & set(c["good"])) / len(c["good"]))
    return statistics.fmean(hits) if hits else 0.0


def highest_harmless(values: list[float], harmless: Callable[[float], bool]) -> float:
    """The highest of the sorted `values` such that it and every one under it is harmless: on a few
    hundred questions recall moves by one question's share either way, so a floor is taken only as
    far as no lower one costs anything."""
    chosen = values[0]
    for v in values:
        if not harmless(v):
            break
        chosen = v
    return chosen


def choose(dev: list[dict[str, Any]]) -> dict[str, float]:
    """The floors and ratio, each on its own grid, the others at their current value."""
    chosen: dict[str, float] = {}
    rel: dict[float, tuple[float, float]] = {}
    for f in RELEVANCE_FLOORS:  # the lexical floor under both modes (the hybrid one unfloored, never skipped)
        with constants(RELEVANCE_FLOOR=f, VECTOR_MARGIN=-1.0, DECISIVE_RATIO=NEVER):
            rel[f] = (recall(dev, False), recall(dev, True))
    base = rel[RELEVANCE_FLOORS[0]]  # no floor
    chosen["RELEVANCE_FLOOR"] = highest_harmless(sorted(rel), lambda f: rel[f][0] >= base[0] - TOLERANCE
                                                 and rel[f][1] >= base[1] - TOLERANCE)
    echo(f"relevance floor (BM25 alone, hybrid): { {f: (round(r[0], 4), round(r[1], 4)) for f, r in rel.items()} }")
    with constants(RELEVANCE_FLOOR=chosen["RELEVANCE_FLOOR"]):
        grid = {}
        for vf in VECTOR_MARGINS:
            for dr in DECISIVE_RATIOS:
                with constants(VECTOR_MARGIN=vf, DECISIVE_RATIO=dr):
                    grid[(vf, dr)] = recall(dev, True)
    echo(f"hybrid grid (vector margin, decisive ratio): { {f'{k[0]}/{k[1]}': round(v, 4) for k, v in grid.items()} }")
    base2 = grid[(VECTOR_MARGINS[0], NEVER)]  # no vector floor, the vector pass always run
    vf = highest_harmless(list(VECTOR_MARGINS), lambda m: grid[(m, NEVER)] >= base2 - TOLERANCE)
    dr = min(r for r in DECISIVE_RATIOS if grid[(vf, r)] >= base2 - TOLERANCE)
    chosen.update(VECTOR_MARGIN=vf, DECISIVE_RATIO=dr)
    with constants(**chosen):  # then what a search costs: the fewest query units, the smallest pool, that cost nothing
        caps = {}
        for cap in QUERY_UNIT_CAPS:
            with constants(MAX_QUERY_UNITS=cap):
                caps[cap] = (recall(dev, False), recall(dev, True))
        full = caps[max(QUERY_UNIT_CAPS)]
        chosen["MAX_QUERY_UNITS"] = min(c for c in QUERY_UNIT_CAPS if all(
            caps[x][0] >= full[0] - TOLERANCE and caps[x][1] >= full[1] - TOLERANCE for x in QUERY_UNIT_CAPS if x >= c))
        echo(f"query unit cap (BM25 alone, hybrid): { {c: (round(r[0], 4), round(r[1], 4)) for c, r in caps.items()} }")
        with constants(MAX_QUERY_UNITS=chosen["MAX_QUERY_UNITS"]):
            pools = {}
            for f in POOLS_PER_HIT:
                with constants(POOL_PER_HIT=f):
                    pools[f] = recall(dev, True)
        widest = pools[max(POOLS_PER_HIT)]
        chosen["POOL_PER_HIT"] = min(f for f in POOLS_PER_HIT if all(
            pools[x] >= widest - TOLERANCE for x in POOLS_PER_HIT if x >= f))
        echo(f"pool per hit (hybrid): { {f: round(r, 4) for f, r in pools.items()} }")
    return chosen


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ctxagent.tui.lab.bench.locomo_fit")
    ap.add_argument("--data", default=str(default_data_path()))
    ap.add_argument("--dev", default=",".join(DEV))
    args = ap.parse_args(argv)
    embedder = memo_embedder(default_cache_path())
    if embedder is None:
        echo("no embedding model installed")
        return 1
    dev_ids = set(args.dev.split(","))
    dev: list[dict[str, Any]] = []
    held: list[dict[str, Any]] = []
    for conv in load_conversations(Path(args.data)):
        (dev if str(conv.get("sample_id")) in dev_ids else held).extend(conversation_cases(conv, embedder))
    with constants(RELEVANCE_FLOOR=0.0, VECTOR_MARGIN=-1.0, DECISIVE_RATIO=NEVER, MAX_QUERY_UNITS=max(QUERY_UNIT_CAPS),
                   POOL_PER_HIT=max(POOLS_PER_HIT)):
        before = {"dev": {"bm25": recall(dev, False), "hybrid": recall(dev, True)},
                  "held": {"bm25": recall(held, False), "hybrid": recall(held, True)}}
    chosen = choose(dev)
    with constants(**chosen):
        after = {"dev": {"bm25": recall(dev, False), "hybrid": recall(dev, True)},
                 "held": {"bm25": recall(held, False), "hybrid": recall(held, True)}}
    current = {"dev": {"bm25": recall(dev, False), "hybrid": recall(dev, True)},
               "held": {"bm25": recall(held, False), "hybrid": recall(held, True)}}  # the modules' values
    echo(json.dumps({"chosen": chosen, "without_floors": before, "with_chosen": after, "with_current": current,
                     "questions": {"dev": len(dev), "held": len(held)}}, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
