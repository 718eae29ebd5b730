"""`context_threshold`: fired once per upward crossing of `at`, with the step's report figures and the
provider's cache state on stdin — a real hook program, the real loop, the scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxagent.agent.updates import ContextBuilt
from ctxagent.tools.contract import FunctionTool, ToolArgs, ToolResult

from .conftest import seen


class BlobArgs(ToolArgs):
    words: int


def blob_tool() -> FunctionTool[BlobArgs]:
    return FunctionTool("blob", "words of output", BlobArgs, "read",
                        lambda args, ctx: ToolResult(" ".join(f"w{i}" for i in range(args.words))))


def _script() -> list[dict[str, Any]]:
    def call(i: int) -> dict[str, Any]:
        return {"tool_calls": [{"name": "blob", "arguments": {"words": 300}}],
                "usage": {"input_tokens": 50 + i, "cache_read": 1000 * i, "cache_write": 7, "output_tokens": 5}}

    # turn 1 grows the context over four steps; a compaction drops it; turn 3 grows it again
    return [call(1), call(2), call(3), call(4), {"text": "one"}, {"text": "two"},
            call(5), call(6), call(7), call(8), {"text": "three"}]


def _run(hooked_agent, hooks: dict[str, Any]) -> tuple[Any, list[Any]]:  # type: ignore[no-untyped-def]
    agent, events, _ = hooked_agent(_script(), hooks, window=12_000, extra_tools=[blob_tool()],
                                    protect_turns=0)
    agent.run_turn("first")
    agent.run_turn("second")
    agent.compact()
    agent.run_turn("third")
    sent = {e.report.step: e.report for e in events if isinstance(e, ContextBuilt)}  # the last figure per step
    agent.session.log.close()
    return agent, [sent[s] for s in sorted(sent)]


def test_fires_once_per_crossing_with_the_reports_figures(hooked_agent, hook_script, repo: Path) -> None:
    _, probe = _run(hooked_agent, {})  # the same session without hooks: the usage of each step
    pcts = [r.usage_pct for r in probe]
    first_after = next(i for i, r in enumerate(probe) if r.turn == 3)  # the first step after the compaction
    at = round((pcts[first_after] + pcts[first_after + 1]) / 200, 4)  # crossed again one step later
    expected = [r.step for prev, r in zip([0.0, *pcts], probe, strict=False) if prev < at * 100 <= r.usage_pct]
    above = [r.step for r in probe if r.usage_pct >= at * 100]
    # the session shape the test needs: two crossings, and steps above the level that must not fire
    assert len(expected) == 2 and len(above) > len(expected), (str(pcts), at)

    hook = hook_script("threshold", "")
    agent, reports = _run(hooked_agent, {"context_threshold": {"at": at, "command": hook}})
    got = seen(repo, "threshold")
    assert [g["step"] for g in got] == expected
    by_step = {r.step: r for r in reports}
    for g in got:
        report = by_step[g["step"]]
        assert g["event"] == "context_threshold" and g["at"] == at
        assert g["percent"] == round(report.usage_pct, 2) and g["percent"] >= at * 100
        assert g["tokens"] == report.used and g["budget"] == report.budget
        assert g["total_tokens"] == report.calibrated_total and g["window"] == 12_000
        i = [r.step for r in reports].index(g["step"])  # one scripted reply per step (the compaction is extractive)
        usage = _script()[i].get("usage", {"cache_read": 0, "cache_write": 0})
        assert g["cache"]["read"] == usage["cache_read"] and g["cache"]["write"] == usage["cache_write"]
        if usage["cache_read"]:
            prompt = usage["input_tokens"] + usage["cache_read"] + usage["cache_write"]
            assert g["cache"]["read_share"] == round(usage["cache_read"] / prompt, 4)
    assert any(g["cache"]["read"] for g in got)  # at least one crossing step carries a cache figure


def test_without_at_it_fires_at_compress_at(hooked_agent, hook_script, repo: Path) -> None:
    _, probe = _run(hooked_agent, {})
    pcts = [r.usage_pct for r in probe]
    level = round((pcts[0] + pcts[1]) / 200, 4)
    hook = hook_script("default_at", "")
    agent, events, _ = hooked_agent(_script(), {"context_threshold": {"command": hook}}, window=12_000,
                                    extra_tools=[blob_tool()], protect_turns=0, compress_at=level)
    agent.run_turn("first")
    got = seen(repo, "default_at")
    assert [g["step"] for g in got] == [2] and got[0]["at"] == level
