"""The perf benchmark's pieces run and report sane shapes (no timing is asserted)."""

from __future__ import annotations

from ctxagent.agent.bench.perf import bench_builder, bench_memory, bench_version
from ctxagent.agent.bench.tables import perf_text


def test_builder_and_memory_benchmarks_report_rows() -> None:
    rows = bench_builder(sizes=(3_000, 6_000), steps=1)
    assert [r["history_tokens"] >= s for r, s in zip(rows, (3_000, 6_000), strict=True)] == [True, True]
    assert all(r["build_ms"] > 0 and r["retokenize_ms"] > 0 and r["events"] > 0 for r in rows)
    mem = bench_memory(record_counts=(30, 60), queries=5)
    assert [r["records"] for r in mem] == [30, 60] and all(r["queries"] == 5 for r in mem)
    text = perf_text({"builder": rows, "memory_search": mem, "version": {}, "tui_first_frame": {}}, md=True)
    assert text.count("| ---") == 0 and "history tokens" in text and "search p95 ms" in text


def test_version_benchmark_runs_the_real_program() -> None:
    v = bench_version(runs=1)
    assert v["output"].startswith("ctxagent ") and v["p50_ms"] > 0
