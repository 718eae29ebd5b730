"""The replay in processes gives the same JSON as in one; per-run results stream to a partial file and a re-run resumes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from ctxagent.tui.lab.bench.progress import Progress
from ctxagent.tui.lab.bench.readers import Trajectory
from ctxagent.tui.lab.bench.replay_run import replay_source

SYSTEM = "You are a coding agent."


def _run(i: int, steps: int) -> Trajectory:
    t = Trajectory("mini-swe-agent", f"org__repo-{i}", system=SYSTEM)
    t.add_user(f"Fix issue {i} in src/mod_{i}.py. Do not change the public API of parse_block_{i}.")
    for k in range(steps):
        cid = f"c{k}"
        t.add_assistant(f"THOUGHT: look at parse_block_{i} again ({k})",
                        [{"id": cid, "name": "bash", "arguments": {"command": f"grep -n parse_block_{i} src/mod_{i}.py"}}],
                        1000 + 400 * k)
        body = "\n".join(f"{n}: def parse_block_{i}_{n}(x): return x + {n * 1000 + i}" for n in range(40 + 10 * k))
        t.add_tool_result(cid, "bash", body)
    t.add_assistant("done", [], 1000 + 400 * steps)
    return t


def runs() -> list[Trajectory]:
    return [_run(i, 3 + i % 3) for i in range(4)]


def _without_timings(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _without_timings(v) for k, v in x.items() if not k.startswith("build_ms") and k != "partial"}
    if isinstance(x, list):
        return [_without_timings(v) for v in x]
    return x


def test_processes_give_the_same_result_as_one() -> None:
    one = replay_source(runs(), 6_000, jobs=1)
    two = replay_source(runs(), 6_000, jobs=2)
    assert one["calls"] == sum(len(t.calls) for t in runs()) and one["runs"] == 4
    assert one["strategies"]["ctxagent"]["spills"] + one["strategies"]["ctxagent"]["prunes"] > 0  # the engine worked
    assert json.dumps(_without_timings(one), sort_keys=True) == json.dumps(_without_timings(two), sort_keys=True)


def test_results_stream_to_the_partial_file_and_a_rerun_resumes(tmp_path: Path) -> None:
    partial = tmp_path / "out.json.partial.jsonl"
    first = replay_source(runs(), 6_000, strategies=["full", "ctxagent"], use_memory=False, partial=partial)
    lines = [json.loads(x) for x in partial.read_text().splitlines()]
    assert sorted(r["index"] for r in lines if r["kind"] == "fit") == [0, 1, 2, 3]
    assert sorted(r["index"] for r in lines if r["kind"] == "run") == [0, 1, 2, 3]
    assert first["partial"]["resumed_runs"] == 0
    # a run killed after two runs: the file holds the fit pass and runs 0 and 2 (and a torn line)
    kept = [x for x in partial.read_text().splitlines() if json.loads(x)["kind"] == "fit"
            or json.loads(x)["index"] in (0, 2)]
    partial.write_text("\n".join(kept) + "\n{\"key\": \"torn")
    again = replay_source(runs(), 6_000, strategies=["full", "ctxagent"], use_memory=False, partial=partial)
    assert again["partial"]["resumed_runs"] == 2 and again["partial"]["resumed_fit_rows"] == 4
    assert _without_timings(again) == _without_timings(first)
    # another question (another window) does not reuse those results
    other = replay_source(runs(), 7_000, strategies=["full", "ctxagent"], use_memory=False, partial=partial)
    assert other["partial"]["resumed_runs"] == 0


def test_progress_lines_with_an_eta_when_stderr_is_no_terminal() -> None:
    buf = io.StringIO()
    with Progress(4, "replay x", stream=buf, line_every=0) as p:
        p.plan([("fit pass", 10, 1.0), ("replay", 10, 4.0)])
        p.phase("fit pass", 10, 1.0)
        p.advance(5)
        fit_line = p.line()
        p.advance(5)
        p.phase("replay", 10, 4.0)
        p.advance(5, note="run-1")
    out = buf.getvalue()
    assert "\r" not in out and out.count("\n") >= 4  # plain lines, not a redrawn bar
    assert "fit pass" in out and "replay [" in out and "run-1" in out and out.rstrip().endswith("done")
    # half the fit pass done: the ETA counts its other half and the whole replay at 4 times the cost per unit
    assert "ETA" in fit_line
    tty = io.StringIO()
    tty.isatty = lambda: True  # type: ignore[method-assign]
    with Progress(2, "bar", stream=tty, min_interval=0) as p:
        p.advance()
        p.advance()
    assert "\r" in tty.getvalue() and "2/2" in tty.getvalue()


def test_the_eta_is_the_rate_so_far_times_the_cost_left() -> None:
    p = Progress(0, "x", stream=io.StringIO(), enabled=False)
    p.plan([("replay", 100, 3.0)])
    p.phase("fit pass", 100, 1.0)
    p._phases[-1].started -= 10.0  # ten seconds into the fit pass ...
    p.advance(50)  # ... half of it done: 0.2 s per unit of cost
    eta = p.eta()
    assert eta is not None and abs(eta - (50 * 1.0 + 100 * 3.0) * 0.2) < 0.5
