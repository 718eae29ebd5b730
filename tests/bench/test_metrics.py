"""Benchmark measures on hand-made numbers: percentiles, the affine fit, prefix reuse, facts."""

from __future__ import annotations

import io

import pytest
from ctxagent.tui.lab.bench.metrics import (
    FactTracker,
    common_prefix_tokens,
    fit_affine,
    paths_in,
    percentile,
    prefix_reuse,
    rel_errors,
    retained,
    tool_call_paths,
)
from ctxagent.tui.lab.bench.progress import Progress


def test_percentiles_interpolate() -> None:
    assert percentile([], 95) == 0.0
    assert percentile([7], 50) == 7
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile(list(range(101)), 95) == pytest.approx(95)
    assert percentile([10, 0], 100) == 10


def test_fit_recovers_an_exact_affine_relation() -> None:
    local = [1000, 5000, 9000, 20000, 41000]
    reported = [25000 + 1.12 * x for x in local]
    fit = fit_affine(local, reported)
    assert fit is not None
    assert fit.a == pytest.approx(25000)
    assert fit.b == pytest.approx(1.12)
    assert fit.median_rel_err == pytest.approx(0, abs=1e-12)
    assert fit.to_local(25000 + 1.12 * 3000) == pytest.approx(3000)
    assert fit.to_dict() == {"a": 25000.0, "b": 1.12, "median_rel_err": 0.0}


def test_fit_median_error_and_degenerate_inputs() -> None:
    # y = 2x except one point 10 % high: residuals from the least-squares line, median taken
    local = [10, 20, 30, 40, 50]
    reported = [20, 40, 66, 80, 100]
    fit = fit_affine(local, reported)
    assert fit is not None
    errs = sorted(abs(fit.predict(x) - y) / y for x, y in zip(local, reported, strict=True))
    assert fit.median_rel_err == pytest.approx(errs[2])
    assert fit_affine([1], [2]) is None
    assert fit_affine([5, 5, 5], [1, 2, 3]) is None  # no spread in x
    assert fit_affine([1, 2], [0, 0]) is None  # zero reports are missing data
    assert rel_errors([110, 90], [100, 100]) == pytest.approx([0.1, 0.1])


def test_prefix_reuse_counts_leading_equal_chunks_only() -> None:
    prev = [("sys", 100), ("u1", 10), ("a1", 20)]
    cur = [("sys", 100), ("u1", 10), ("a1", 20), ("t1", 70)]
    assert common_prefix_tokens(prev, cur) == 130
    assert prefix_reuse(prev, cur) == pytest.approx(130 / 200)
    assert prefix_reuse(None, cur) is None
    # a changed message (e.g. a summary replacing the oldest turns) ends the reusable prefix
    compacted = [("sys", 100), ("summary", 15), ("a1", 20), ("t1", 70)]
    assert prefix_reuse(cur, compacted) == pytest.approx(100 / 205)
    assert prefix_reuse(prev, []) == 0.0


def test_paths_become_file_name_facts() -> None:
    text = "sed -n '1,80p' astropy/modeling/separable.py && cat ./README.md; ls src/libponyc; v1.2.3 x.append(1)"
    assert paths_in(text) == {"separable.py", "README.md", "libponyc"}
    assert paths_in("修改 配置/设置.py") == {"设置.py"}
    calls = [{"arguments": {"file_path": "/home/u/repo/lib/session_live.ex"}}, {"arguments": {"command": "pytest tests/test_a.py -q"}}]
    assert tool_call_paths(calls) == {"session_live.ex", "test_a.py"}


def test_fact_tracker_only_counts_paths_seen_before() -> None:
    ft = FactTracker()
    ft.add("user", {"text": "The bug is in src/parser.py, see also docs/notes.md", "turn": 1})
    ft.add("tool_result", {"content": "src/lexer.py\nsrc/parser.py"})
    calls = [{"id": "1", "name": "bash", "arguments": {"command": "cat src/parser.py src/lexer.py new/unknown.py"}}]
    assert ft.facts(calls) == ["lexer.py", "parser.py"]
    # an absolute path in the call matches the relative one seen earlier by its file name
    assert ft.facts([{"arguments": {"path": "/repo/docs/notes.md"}}]) == ["notes.md"]
    assert retained(["lexer.py", "parser.py"], "summary: changed parser.py") == 1


def test_progress_draws_to_its_stream() -> None:
    buf = io.StringIO()
    with Progress(4, "replay", stream=buf, min_interval=0, plain=False) as p:
        for _ in range(4):
            p.advance(note="run")
    out = buf.getvalue()
    assert "replay [" in out and "4/4" in out and out.endswith("\n")
    quiet = io.StringIO()
    with Progress(2, "x", stream=quiet, enabled=False) as p:
        p.advance()
    assert quiet.getvalue() == ""
