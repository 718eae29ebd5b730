"""After its own compaction a source's request holds context its transcript lacks (Claude Code re-attaches
files to the summary). The calibrator's pairs count it, so the ratio the strategies are measured with does not
climb mid-session for content only the source's request carried."""

from __future__ import annotations

from ctxagent.tui.lab.bench.readers import SourceEvent, Trajectory
from ctxagent.tui.lab.bench.replay_setup import (
    Engine,
    calibrated_ratios,
    hidden_after_compaction,
    make_prefix,
    reference_pass,
    request_local,
    source_fit,
)

PREFIX = 20_000  # provider tokens of system prompt and tools the transcript lacks
SLOPE = 1.2  # provider tokens per local token
HIDDEN = 6_000  # provider tokens re-attached after the compaction, in no record


def _session() -> Trajectory:
    t = Trajectory("claude-code", "hidden", system="You are a coding agent.")
    t.add_user("Port the exporter to streaming. 不要添加依赖。")
    for i in range(24):
        if i == 12:
            t.events.append(SourceEvent("source_compaction", {"summary": "We ported the reader; next the writer.",
                                                              "pre_tokens": 90_000}))
            t.add_user("continue")
        t.add_assistant(f"step {i}", [{"id": f"c{i}", "name": "Read", "arguments": {"path": f"lib/part_{i}.py"}}], None)
        t.add_tool_result(f"c{i}", "Read", "\n".join(f"line {i}.{k}: value = compute({k})" for k in range(60 * (i % 12 + 1))))
    return t


def _reported(t: Trajectory, engine: Engine) -> list[tuple[float, bool]]:
    """The provider's counts of a source whose requests after its compaction carried HIDDEN more tokens."""
    rows = reference_pass(t, engine)
    for call, (local, after) in zip(t.calls, rows, strict=True):
        call.reported = round(PREFIX + SLOPE * request_local(local, t.system, (), engine) + (HIDDEN if after else 0))
    return rows


def test_the_context_re_attached_after_a_compaction_is_counted_not_charged_as_a_ratio() -> None:
    engine = Engine.load(32_000)
    traj = _session()
    rows = _reported(traj, engine)
    fit = source_fit([traj], engine, [rows])
    assert fit is not None and abs(fit.b - SLOPE) < 0.01 and abs(fit.a - PREFIX) < 50
    (hidden,) = hidden_after_compaction([traj], [rows], fit, engine)
    assert abs(hidden - HIDDEN / SLOPE) < 50  # in local tokens
    prefix = make_prefix("auto", fit, engine.counter)  # the replay's: the prefix the transcript lacks, as filler
    after = [k for k, (_, a) in enumerate(rows) if a]
    assert len(after) >= 8
    (counted,), _ = calibrated_ratios([traj], [rows], prefix, engine, [hidden])
    (uncounted,), _ = calibrated_ratios([traj], [rows], prefix, engine)
    # the ratio at each call after the compaction (the first two: the calibrator meets the jump)
    settled = after[2:]
    assert min(uncounted[k] for k in settled) > SLOPE + 0.05  # the shift it would learn from the source's requests
    assert all(abs(counted[k] - SLOPE) < 0.02 for k in settled)  # counted: the tokenizer's ratio, as before it


def test_a_run_without_a_compaction_or_a_fit_has_nothing_hidden() -> None:
    engine = Engine.load(32_000)
    traj = _session()
    traj.events = [e for e in traj.events if e.kind != "source_compaction"]
    traj.calls.clear()
    rebuilt = Trajectory("claude-code", "plain", system=traj.system)
    for e in traj.events:
        if e.kind == "assistant":
            rebuilt.add_assistant(e.data["text"], e.data["tool_calls"], None)
        else:
            rebuilt.events.append(e)
    rows = _reported(rebuilt, engine)
    fit = source_fit([rebuilt], engine, [rows])
    assert hidden_after_compaction([rebuilt], [rows], fit, engine) == [0.0]
    assert hidden_after_compaction([rebuilt], [rows], None, engine) == [0.0]
