"""`python -m ctxagent.tui.lab.bench.memory_compare`: every variant of the search constants is timed on one real store,
and the module's constants are back as they were afterwards."""

from __future__ import annotations

from pathlib import Path

from ctxagent.context.memory import MemoryStore, hybrid, search
from ctxagent.tui.lab.bench.memory_compare import compare
from ctxagent.tui.lab.bench.memory_latency import QUERIES, fill


def test_compare_times_each_variant_and_restores_the_constants(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with MemoryStore.open(path, embeddings=False) as store:
        fill(store, 300)
    before = (search.MAX_QUERY_UNITS, hybrid.POOL_PER_HIT)
    out = compare(path, QUERIES[:3], {"all": {"MAX_QUERY_UNITS": 48}, "two": {"MAX_QUERY_UNITS": 2}}, "bm25", rounds=2)
    assert (search.MAX_QUERY_UNITS, hybrid.POOL_PER_HIT) == before
    assert set(out) == {"all", "two"}
    for row in out.values():
        assert set(row["search_ms"]) == {"p50", "p95", "max"} and row["search_cpu_ms"]["max"] >= 0
    assert 0.0 <= out["two"]["same_top8_as_all"] <= 1.0
