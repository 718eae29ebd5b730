"""Replay on tiny hand-made trajectories: retention, overflows, the reference fit, full vs window."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from ctxagent.agent.bench.readers import Trajectory
from ctxagent.agent.bench.replay import Engine, replay_source
from ctxagent.agent.bench.tokens_bench import reference_estimates, tokens_source
from ctxagent.context.budget import Budget
from ctxagent.context.builder import BuildInputs, build
from ctxagent.context.history import Event
from ctxagent.context.tokens import count_request

SYSTEM = "You are a coding agent."


def _big_output(lines: int, needle_at: int | None = None) -> str:
    out = [f"line {i:04d}: value_{i} = compute(alpha_{i}, beta_{i}) # 说明 {i}" for i in range(lines)]
    if needle_at is not None:
        out[needle_at] = "see helpers/helpers.py for the shared code"
    return "\n".join(out)


def _call(traj: Trajectory, cid: str, command: str, reported: int | None) -> None:
    traj.add_assistant("THOUGHT", [{"id": cid, "name": "bash", "arguments": {"command": command}}], reported)


def tiny_trajectory(reported: bool = True) -> Trajectory:
    """call 1 reads app.py (named by the user); its output names helpers.py deep in the middle;
    call 2 reads helpers.py (a fact only a context that kept that middle still shows); call 3 ends."""
    t = Trajectory("mini-swe-agent", "tiny", system=SYSTEM)
    t.add_user("Fix the crash in src/app.py please. 修复崩溃。")
    _call(t, "c1", "cat src/app.py", 1000 if reported else None)
    t.add_tool_result("c1", "bash", _big_output(900, needle_at=450))
    _call(t, "c2", "cat helpers/helpers.py", 2000 if reported else None)
    t.add_tool_result("c2", "bash", "def shared():\n    return 1\n")
    t.add_assistant("done", [], 3000 if reported else None)
    return t


def _full_requests(traj: Trajectory, window: int) -> list[int]:
    """Independent count: the full request at each call, built from the raw events so far."""
    engine = Engine.load(window)
    out = []
    for call in traj.calls:
        events = [Event(i, e.kind, e.data) for i, e in enumerate(traj.events[: call.position])]
        res = build(BuildInputs(events=events, system=SYSTEM, tools=[], budget=Budget(window=10**9), counter=engine.counter,
                                step=1, turn=1, strategy="full"))
        out.append(count_request(res.request, engine.counter))
    return out


def test_full_and_window_tokens_retention_and_overflows() -> None:
    traj = tiny_trajectory()
    window = 12_000
    full_tokens = _full_requests(traj, window)
    res = replay_source([traj], window, strategies=["full", "window"])
    full, win = res["strategies"]["full"], res["strategies"]["window"]
    assert res["runs"] == 1 and res["calls"] == 3
    assert full["tokens_sum"] == sum(full_tokens)
    assert full["overflows"] == sum(1 for n in full_tokens if n > window)
    assert full["overflows"] >= 1  # the 900-line output alone is over 12k tokens
    # facts: app.py at call 1 (named by the user), helpers.py at call 2 (named in the output's middle)
    assert full["retention"] == 1.0
    # the sliding window caps each message at 4,000 tokens: the middle of the big output is gone
    assert win["retention"] == 0.5
    assert win["tokens_sum"] < full["tokens_sum"]
    assert win["overflows"] == 0
    assert 0 < full["prefix_reuse"] <= 1
    assert full["build_ms_p50"] is not None and full["spills"] == 0 and full["compactions"] == 0


def test_reference_fit_converts_reported_tokens() -> None:
    traj = tiny_trajectory()
    local = _full_requests(traj, 10**9)
    # make the reported tokens an exact affine function of the local count: the fit must find it
    for call, n in zip(traj.calls, local, strict=True):
        call.reported = int(round(5000 + 1.25 * n))
    res = replay_source([traj], 200_000, strategies=["full"])
    fit = res["fit"]
    assert fit["a"] == pytest.approx(5000, abs=2)
    assert fit["b"] == pytest.approx(1.25, abs=1e-3)
    assert fit["median_rel_err"] < 1e-3
    ref = res["strategies"]["reference"]
    assert ref["tokens_sum"] == pytest.approx(sum(local), abs=3)
    assert ref["retention"] == 1.0 and ref["compactions"] == 0


def test_reference_without_reported_tokens_uses_its_local_view() -> None:
    traj = tiny_trajectory(reported=False)
    res = replay_source([traj], 200_000, strategies=["full"])
    assert res["fit"] is None
    assert res["strategies"]["reference"]["tokens_sum"] == res["strategies"]["full"]["tokens_sum"]


def test_reference_retention_uses_the_real_summary_after_a_source_compaction() -> None:
    traj = tiny_trajectory()
    last = traj.events.pop()  # drop the final answer; compact, then come back to helpers.py
    traj.calls.pop()
    from ctxagent.agent.bench.readers import SourceEvent

    traj.events.append(SourceEvent("source_compaction", {"summary": "Summary: we read src/app.py.", "pre_tokens": 9000}))
    traj.add_user("continue")
    _call(traj, "c3", "python helpers/helpers.py", 1500)
    traj.add_tool_result("c3", "bash", "ok")
    traj.events.append(last)
    res = replay_source([traj], 200_000, strategies=["full", "ctxagent"], use_memory=False)
    after = res["after_source_compaction"]
    assert after["calls"] == 1
    assert after["facts"] == 1 and after["early_facts"] == 1
    assert after["retention"]["reference"] == 0.0  # the real summary dropped helpers.py
    assert after["retention"]["full"] == 1.0
    assert res["strategies"]["reference"]["compactions"] == 1
    # the fit used only the calls before the compaction
    assert res["fit"] is not None


def test_ctxagent_spills_big_output_and_keeps_within_window() -> None:
    traj = tiny_trajectory()
    res = replay_source([traj], 12_000, strategies=["ctxagent"])
    c = res["strategies"]["ctxagent"]
    assert c["spills"] == 1
    assert c["overflows"] == 0
    assert c["tokens_sum"] < 12_000 * 3


def test_tokens_bench_calibrates_from_previous_calls() -> None:
    traj = tiny_trajectory()
    engine = Engine.load(10**9)
    pairs = reference_estimates(traj, engine)
    for call, (_, local) in zip(traj.calls, pairs, strict=True):
        call.reported = int(local * 1.2)  # a provider whose tokenizer counts 20 % more
    res = tokens_source([traj, traj], engine=engine)
    assert res["calls"] == 6
    assert res["raw"]["median_rel_err"] == pytest.approx(1 / 6, abs=0.01)
    assert res["calibrated"]["median_rel_err"] < 0.01
    assert res["final_ratio"] == pytest.approx(1.2, abs=0.01)


def test_cli_replay_json_shape(tmp_path) -> None:  # type: ignore[no-untyped-def]
    traj_file = tmp_path / "run.jsonl"
    run = {"instance_id": "x", "messages": [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "fix src/app.py"},
        {"role": "assistant", "content": "THOUGHT\n```bash\ncat src/app.py\n```", "usage": {"prompt_tokens": 120}},
        {"role": "user", "content": "<returncode>0</returncode><output>import os</output>"},
        {"role": "assistant", "content": "THOUGHT\n```bash\nsed -i s/a/b/ src/app.py\n```", "usage": {"prompt_tokens": 160}},
        {"role": "user", "content": "<returncode>0</returncode><output></output>"},
    ]}
    traj_file.write_text(json.dumps(run) + "\n")
    out = subprocess.run([sys.executable, "-m", "ctxagent.agent.cli", "bench", "replay", "--source", "mini-swe-agent",
                          "--data", str(traj_file), "--window", "32000", "--json"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert set(res) >= {"source", "window", "runs", "calls", "fit", "strategies", "skipped"}
    assert set(res["strategies"]) == {"full", "window", "ctxagent", "reference"}
    keys = {"tokens_sum", "tokens_mean", "tokens_p95", "prefix_reuse", "overflows", "retention", "build_ms_p50",
            "build_ms_p95", "spills", "prunes", "compactions"}
    assert all(set(s) == keys for s in res["strategies"].values())
    assert res["calls"] == 2 and res["fit"] is not None
