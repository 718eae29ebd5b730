"""The perf benchmark's pieces run and report sane shapes (no timing is asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ctxagent.context.memory.embed import detect
from ctxagent.tui.lab.bench.perf import bench_builder, bench_memory, bench_version
from ctxagent.tui.lab.bench.tables import perf_text


def test_builder_and_memory_benchmarks_report_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the bench's memo of vectors
    rows = bench_builder(sizes=(3_000, 6_000), steps=1)
    assert [r["history_tokens"] >= s for r, s in zip(rows, (3_000, 6_000), strict=True)] == [True, True]
    assert all(r["build_ms"] > 0 and r["retokenize_ms"] > 0 and r["events"] > 0 for r in rows)
    mem = bench_memory(record_counts=(10, 20), queries=8)
    assert [r["records"] for r in mem] == [10, 20]
    hybrid = detect() is not None
    for r in mem:  # both modes side by side, each query asked once and then 3 times more
        assert r["bm25"]["queries"] == 8
        assert r["hybrid"]["queries"] == 8 if hybrid else "skipped" in r["hybrid"]
    text = perf_text({"builder": rows, "memory_search": mem, "version": {}, "tui_first_frame": {}}, md=True)
    assert text.count("| ---") == 0 and "history tokens" in text and "search p95 ms" in text and "hybrid" in text


def test_version_benchmark_runs_the_real_program() -> None:
    v = bench_version(runs=1)
    assert v["output"].startswith("ctxagent ") and v["p50_ms"] > 0
