"""The server-side context management rule (context/server_edits.py) and the strategies built on it."""

from __future__ import annotations

import pytest
from ctxagent.context.budget import Budget
from ctxagent.context.builder.dispatch import build
from ctxagent.context.builder.inputs import BuildInputs
from ctxagent.context.events import AssistantData, ToolResultData, UserData
from ctxagent.context.history import Event
from ctxagent.context.request import ToolCall
from ctxagent.context.server_edits import (
    CLEAR_KEEP,
    CLEAR_TRIGGER,
    COMPACT_TRIGGER,
    ClearToolUses,
    Compact,
    ToolUse,
    beta_headers,
    edits_from_wire,
    plan_clear,
    server_edits_for,
)
from ctxagent.context.tokens import CachedCounter, get_counter

USES = [ToolUse(f"t{i}", "grep" if i == 1 else "read_file", 500, 20) for i in range(6)]


def test_documented_defaults_scale_to_the_window() -> None:
    assert server_edits_for("anthropic-clear", 1_000_000) == (ClearToolUses(CLEAR_TRIGGER, CLEAR_KEEP),)
    assert server_edits_for("anthropic-compact", 1_000_000) == (Compact(COMPACT_TRIGGER),)
    # 0.75 W when the documented default would not fire before the window is full
    assert server_edits_for("anthropic-clear", 100_000)[0].trigger == 75_000
    assert server_edits_for("anthropic-compact", 200_000)[0].trigger == 150_000
    assert server_edits_for("ctxagent", 200_000) == ()


def test_clear_fires_only_past_the_trigger_and_keeps_the_last_uses() -> None:
    edit = ClearToolUses(trigger=1000, keep=2)
    assert plan_clear(USES, 1000, edit) is None
    plan = plan_clear(USES, 1001, edit)
    assert plan is not None and plan.ids == {"t0", "t1", "t2", "t3"} and plan.cleared_tokens == 2000
    assert plan_clear(USES, 5000, ClearToolUses(trigger=1000, keep=6)) is None  # nothing older than the kept ones


def test_clear_options() -> None:
    excluded = plan_clear(USES, 5000, ClearToolUses(trigger=10, keep=2, exclude_tools=("grep",)))
    assert excluded is not None and excluded.ids == {"t0", "t2", "t3"}
    inputs = plan_clear(USES, 5000, ClearToolUses(trigger=10, keep=2, clear_tool_inputs=True))
    assert inputs is not None and inputs.cleared_tokens == 4 * 520
    assert plan_clear(USES, 5000, ClearToolUses(trigger=10, keep=2, clear_at_least=2001)) is None
    assert plan_clear(USES, 5000, ClearToolUses(trigger=10, keep=2, clear_at_least=2000)) is not None


def test_wire_round_trip_and_errors() -> None:
    edits = (ClearToolUses(1234, 5, 300, ("grep",), True), Compact(9000, "keep the file names"))
    wire = {"edits": [e.to_wire() for e in edits]}
    assert edits_from_wire(wire) == edits
    assert beta_headers(wire["edits"]) == ["compact-2026-01-12", "context-management-2025-06-27"]
    assert edits_from_wire({"edits": [{"type": "clear_tool_uses_20250919"}]}) == (ClearToolUses(),)
    for bad in ({"edits": [{"type": "clear_everything"}]}, {"edits": "x"}, [],
                {"edits": [{"type": "clear_tool_uses_20250919", "keep": {"type": "input_tokens", "value": 3}}]},
                {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": -1}}]}):
        with pytest.raises(ValueError):
            edits_from_wire(bad)


def _events(results: int, size: int) -> list[Event]:
    evs = [Event(0, "user", UserData(text="读取所有文件 and summarize", turn=1).to_data())]
    for i in range(results):
        evs.append(Event(len(evs), "assistant", AssistantData(tool_calls=[ToolCall(id=f"c{i}", name="read_file",
                                                                                    arguments={"path": f"f{i}.py"})],
                                                              step=i + 1, turn=1).to_data()))
        evs.append(Event(len(evs), "tool_result", ToolResultData(call_id=f"c{i}", name="read_file",
                                                                 content=f"file {i}\n" + "word " * size, turn=1).to_data()))
    return evs


def _inputs(events: list[Event], strategy: str, window: int = 8000) -> BuildInputs:
    return BuildInputs(events=events, system="sys", tools=[], budget=Budget(window, max_output=1024),
                       counter=CachedCounter(get_counter("o200k_base")), step=1, turn=1, strategy=strategy)


@pytest.mark.parametrize("strategy", ["anthropic-clear", "anthropic-compact"])
def test_server_strategies_send_the_history_like_full(strategy: str) -> None:
    events = _events(4, 300)
    full = build(_inputs(events, "full"))
    ours = build(_inputs(events, strategy))
    assert [m.to_dict() for m in ours.request.messages] == [m.to_dict() for m in full.request.messages]
    assert ours.request.server_edits == server_edits_for(strategy, 8000)
    assert ours.report.strategy == strategy and ours.report.notes == []
    assert "server_edits" in ours.request.to_dict() and "server_edits" not in full.request.to_dict()


@pytest.mark.parametrize("strategy", ["anthropic-clear", "anthropic-compact"])
def test_over_the_window_ctxagent_relieves_the_step(strategy: str) -> None:
    events = _events(12, 800)
    inputs = _inputs(events, strategy)
    assert build(_inputs(events, "full")).report.total > inputs.budget.limit
    result = build(inputs)
    assert result.report.total <= inputs.budget.limit
    assert any("ctxagent's own relief built this step" in n for n in result.report.notes)
    assert result.request.server_edits == server_edits_for(strategy, 8000)
    assert result.report.strategy == strategy
