"""context_status and compact_context on the real loop, through both real SDKs against the scripted
server: what the model reads back is in the next body the server received."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ctxagent.agent.updates import CompactionDone, Notice
from ctxagent.context.history import Event, view
from ctxagent.context.monitor import usage_text
from ctxagent.tools import budget_tools as budget_module
from ctxagent.tools.budget_tools import budget_tools
from ctxagent.tools.contract import FunctionTool, ToolArgs, ToolResult


class RowsArgs(ToolArgs):
    n: int


def rows_tool() -> FunctionTool[RowsArgs]:
    """A long output from a short call (the call's arguments stay small)."""
    return FunctionTool("rows", "the report's rows", RowsArgs, "read", lambda args, ctx: ToolResult(
        "\n".join(f"row {i}: the parser keeps line {i} of report {args.n} as it was written" for i in range(400))))


def _tool_output(body: dict[str, Any], name_hint: str = "") -> str:
    """The newest tool result's text in a wire body (either SDK's shape)."""
    texts: list[str] = []
    for msg in body["messages"]:
        if msg.get("role") == "tool":
            texts.append(str(msg.get("content")))
        content = msg.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    inner = block.get("content")
                    texts.append(inner if isinstance(inner, str) else json.dumps(inner, ensure_ascii=False))
    assert texts, "no tool result in the body"
    return texts[-1]


def _status_turns(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        out += [{"text": f"reading {i}", "tool_calls": [{"name": "rows", "arguments": {"n": i}}]},
                {"text": f"read {i}"}]
    return out


def test_context_status_reports_the_last_build_in_provider_tokens_with_handles(sdk_agent) -> None:
    script = [*_status_turns(6),
              {"text": "checking my budget", "tool_calls": [{"name": "context_status", "arguments": {}}]},
              {"text": "I see my budget."}]
    agent, _, srv = sdk_agent(script, window=9_000, extra_tools=[rows_tool(), *budget_tools()], spill_tokens=1500)
    for i in range(6):
        turn = agent.run_turn(f"turn {i}: read the report rows 第{i}轮")
        assert turn.stop_reason == "end_turn", (i, turn.error)
    before = agent.step
    done = agent.run_turn("how full is your context? 上下文还剩多少?")
    assert done.text == "I see my budget."
    report = agent.reports[before]  # the step that called context_status
    text = _tool_output(srv.requests[-1]["body"])
    assert f"{report.calibrated_total:,} of {report.window:,} tokens" in text
    assert f"{usage_text(report.usage_pct)} of the window" in text and f"advice: {report.advice}" in text
    assert "Slices (used / budget): system " in text and "tools " in text and "reserve " in text
    # every cut the last request showed is named with the handle that brings it back
    build_ids = agent.log.of_kind("context_report")[before].id
    spilled = [e for e in agent.log.events[:build_ids] if e.kind == "tool_result" and e.tool_result.spill_ref]
    assert spilled, "the echo outputs were spilled"
    assert f"handle={spilled[-1].tool_result.spill_ref.handle}" in text
    comps = [e for e in agent.log.events[:build_ids] if e.kind == "compaction"]
    if comps:
        assert f"events {comps[-1].compaction.first_id}–{comps[-1].compaction.last_id}" in text
    assert "Prompt cache: warm since" in text  # the session just ran
    assert agent.log.of_kind("compaction") == comps  # read-only: it changed nothing


def test_context_status_says_cold_after_an_idle_gap(sdk_agent, monkeypatch: pytest.MonkeyPatch) -> None:
    script = [{"text": "hello"}, {"text": "checking", "tool_calls": [{"name": "context_status", "arguments": {}}]},
              {"text": "ok"}]
    agent, _, srv = sdk_agent(script, extra_tools=[rows_tool(), *budget_tools()])
    agent.run_turn("hi")
    real = budget_module._now
    monkeypatch.setattr(budget_module, "_now", lambda: real() + 3600)  # the clock an hour on: a true boundary
    agent.run_turn("are you still warm?")
    text = _tool_output(srv.requests[-1]["body"])
    assert "Prompt cache: cold since about" in text and "the next request pays its whole prompt" in text


def test_compact_context_compacts_before_the_next_step_and_shows_it(sdk_agent) -> None:
    script = [*_status_turns(3),
              {"text": "my context is full of rows",
               "tool_calls": [{"name": "compact_context", "arguments": {"focus": "row 7 of the report 第七行"}}]},
              {"text": "compacted, going on"}]
    agent, events, srv = sdk_agent(script, window=64_000, extra_tools=[rows_tool(), *budget_tools()])
    for i in range(3):
        agent.run_turn(f"turn {i}: read the rows")
    assert not agent.log.of_kind("compaction")
    done = agent.run_turn("tidy up your context")
    assert done.text == "compacted, going on"
    (comp,) = agent.log.of_kind("compaction")
    assert comp.compaction.focus == "row 7 of the report 第七行"
    # before the next step, and that step's request shows the summary instead of the turns it masks
    reports = agent.log.of_kind("context_report")
    assert reports[-2].id < comp.id < reports[-1].id
    last = srv.requests[-1]["body"]
    assert "Summary of earlier conversation" in json.dumps(last, ensure_ascii=False)
    assert "Compaction requested with the focus: row 7 of the report 第七行" in _tool_output(last)
    # non-destructive: every original is still in the log; the masked ones leave the view only
    masked = [e for e in agent.log.events if comp.compaction.first_id <= e.id <= comp.compaction.last_id]
    assert masked and all(e.kind for e in masked)
    assert not any(isinstance(it, Event) and it.id == comp.compaction.first_id for it in view(agent.log.events))
    # shown to the user: a notice and the compaction panel
    assert any(isinstance(e, Notice) and "the model asked to compact" in e.message and "第七行" in e.message for e in events)
    assert [e for e in events if isinstance(e, CompactionDone)]
    assert agent.compaction_request is None  # honoured once
