"""Search constants A/B at 100k records: each query asked under every variant in turn, on one store.

    python -m ctxagent.tui.lab.bench.memory_compare --queries real --store /tmp/real.db \
        --variants '{"before": {"MAX_QUERY_UNITS": 48, "POOL_PER_HIT": 6.25}, "after": {}}' [--mode both]

`--queries synthetic`: `bench memory-latency`'s records and its ten short product queries; `real`:
`bench perf`'s memory part, real mini-swe-agent records and the long queries recall asks (40 words of
a task and a file name). The store is filled only when it is missing (the write of 100k takes minutes),
and the hybrid mode gives it vectors as `bench memory-latency` does. An empty variant is the modules'
own constants. Wall and CPU of the repeats; the order of the variants flips every round.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from ctxagent.context.floor.display import echo_json
from ctxagent.context.memory import MemoryStore
from ctxagent.tui.lab.bench.memory_latency import QUERIES, bench_embedder, fill, give_vectors, pct

# the search constants `compare` may set, and their modules
TUNABLE = {"MAX_QUERY_UNITS": "search", "POOL_PER_HIT": "hybrid", "POSTING_BUDGET": "search"}


def real_store(path: Path, n: int) -> list[str]:
    """A store at `path` of `n` real mini-swe-agent records, written as `bench perf`'s memory part writes
    them (kept: the next run reuses it), and that bench's long queries (40 words of a task + a file)."""
    from ctxagent.tui.lab.bench.perf import _record_texts

    contents, queries = _record_texts(None)
    if not path.exists():
        types = ("note", "change", "decision", "note", "summary")
        with MemoryStore.open(path, embeddings=False) as store:
            for i in range(n):
                store.add(f"{contents[i % len(contents)]} [r{i}]", types[i % len(types)], session=f"s{i // 2000}",
                          turn=i // 20, merge=False, supersede=False)
    return queries


def compare(path: Path, queries: list[str], variants: dict[str, dict[str, float]], mode: str,
            rounds: int = 4) -> dict[str, Any]:
    """Each query asked under every variant of the search constants in turn (the order flipped every
    round), on one store in one process: wall and CPU of the repeats (every query is asked once first,
    embedded then), and how often a variant's top 8 is the first variant's."""
    from ctxagent.context.memory import hybrid, search

    mods = {"search": search, "hybrid": hybrid}
    emb = bench_embedder() if mode == "hybrid" else None
    if mode == "hybrid" and emb is None:
        return {"skipped": "no embedding model installed"}
    names = list(variants)
    times: dict[str, dict[str, list[float]]] = {v: {"search_ms": [], "search_cpu_ms": []} for v in names}
    same: dict[str, list[float]] = {v: [] for v in names[1:]}
    saved = {k: getattr(mods[m], k) for k, m in TUNABLE.items()}
    try:
        with MemoryStore.open(path, embeddings=mode == "hybrid", embedder=emb) as store:
            if emb is not None and store.conn.execute("SELECT COUNT(*) FROM record_vectors").fetchone()[0] == 0:
                give_vectors(store, emb)
            for q in ["warm up the index", *queries]:
                store.search(q, limit=8)
            for rnd in range(rounds):
                for q in queries:
                    top: dict[str, list[int]] = {}
                    for v in (names if rnd % 2 == 0 else names[::-1]):
                        for k, x in {**saved, **variants[v]}.items():
                            setattr(mods[TUNABLE[k]], k, type(saved[k])(x))
                        t, c = time.perf_counter(), time.process_time()
                        found = store.search(q, limit=8)
                        times[v]["search_ms"].append((time.perf_counter() - t) * 1000)
                        times[v]["search_cpu_ms"].append((time.process_time() - c) * 1000)
                        top[v] = [r.id for r in found]
                    if rnd == 0:
                        for v in names[1:]:
                            same[v].append(float(top[v] == top[names[0]]))
    finally:
        for k, x in saved.items():
            setattr(mods[TUNABLE[k]], k, x)
    out: dict[str, Any] = {v: {k: pct(x) for k, x in times[v].items()} for v in names}
    for v in names[1:]:
        out[v]["same_top8_as_" + names[0]] = round(statistics.fmean(same[v]), 3) if same[v] else None
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ctxagent.tui.lab.bench.memory_compare")
    ap.add_argument("--variants", required=True, help="JSON: name -> {constant: value}; {} is the modules' own")
    ap.add_argument("--store", required=True, help="the store to search, filled first when missing")
    ap.add_argument("--queries", choices=("synthetic", "real"), default="synthetic")
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--mode", choices=("both", "bm25", "hybrid"), default="both")
    args = ap.parse_args(argv)
    path = Path(args.store)
    if args.queries == "real":
        queries = real_store(path, args.records)[:50]
    else:
        queries = QUERIES
        if not path.exists():
            with MemoryStore.open(path, embeddings=False) as store:
                fill(store, args.records)
    modes = ("bm25", "hybrid") if args.mode == "both" else (args.mode,)
    variants = json.loads(args.variants)
    echo_json({"store": str(path), "queries": args.queries,
               **{mode: compare(path, queries, variants, mode, max(1, args.rounds)) for mode in modes}}, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
