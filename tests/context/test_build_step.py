"""A library user's steps with the `ctxagent.context` face alone (no agent): build the next request,
record it in the session log, and rebuild every step later from the log alone — the same request, to
the byte, its planned compactions included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ctxagent.context as ctx


def _wire(request: ctx.Request) -> dict[str, Any]:
    """A provider's own body for the request (here: one field renamed and one added)."""
    body = request.to_dict()
    return {"model": "lib:model", "system_prompt": body.pop("system"), **body}


TOOLS = [ctx.ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})]
PAGE = "\n".join(f"line {i}: 读取的内容保持原样, the content stays as read" for i in range(400))


def test_build_record_and_rebuild_with_the_context_face_alone(tmp_path: Path) -> None:
    setup = ctx.StepSetup(system="You are a careful agent.", tools=TOOLS, budget=ctx.Budget(6_000, max_output=512),
                          counter=ctx.CachedCounter(ctx.get_counter("o200k_base")), model="lib:model")
    with ctx.SessionLog.create(tmp_path, "lib-1") as log:
        assert ctx.record_system_prompt(log, setup.system, setup.tools) is not None
        assert ctx.record_system_prompt(log, setup.system, setup.tools) is None  # unchanged: not logged again
        recorded: list[ctx.RecordedStep] = []
        for turn in range(1, 7):
            log.append(ctx.UserData(text=f"read part {turn} and summarize it", turn=turn))
            step = ctx.build_step(log, setup, body=_wire)
            recorded.append(step)
            assert step.report.context_report.step == len(recorded)  # steps numbered in request order
            log.append(ctx.AssistantData(text="reading", step=len(recorded), turn=turn, stop_reason="tool_use",
                                         tool_calls=[ctx.ToolCall(id=f"c{turn}", name="read_file",
                                                                      arguments={"path": f"part{turn}.txt"})]))
            log.append(ctx.ToolResultData(call_id=f"c{turn}", name="read_file", content=PAGE, turn=turn))
        # the window is small: the builder had to compact, and the compactions are in the log
        planned = [ev for step in recorded for ev in step.compactions]
        assert planned and all(ev.kind == "compaction" for ev in planned)
        assert all(step.result.report.total <= setup.budget.limit for step in recorded)
        events = list(log.events)
    # every step rebuilds from the log alone, with the same body function: the same sha256
    for step in recorded:
        number = step.report.context_report.step
        rebuilt = ctx.rebuild_step(events, number, lambda _model, request: _wire(request))
        assert rebuilt.verified, f"step {number} does not rebuild"
        assert rebuilt.body == step.body
        assert ctx.request_sha256(rebuilt.body) == step.report.context_report.request_sha256
    # a different body function is a different request: the check is real
    assert not ctx.rebuild_step(events, 1).verified


def test_build_next_records_nothing(tmp_path: Path) -> None:
    setup = ctx.StepSetup(system="s", tools=TOOLS, budget=ctx.Budget(8_000, max_output=512),
                          counter=ctx.CachedCounter(ctx.get_counter("o200k_base")))
    with ctx.SessionLog.create(tmp_path, "lib-2") as log:
        log.append(ctx.UserData(text="你好", turn=1))
        preview = ctx.build_next(log, setup)
        assert preview.report.step == 1 and len(log.events) == 1
        recorded = ctx.build_step(log, setup)
        assert recorded.report.context_report.build == ctx.BuildParams(
            window=8_000, fractions=setup.budget.fractions, max_output=512, profile="default",
            tools_high=setup.budget.tools_high, tools_low=setup.budget.tools_low,
            protect_steps=setup.budget.protect_steps, step_chunk=setup.budget.step_chunk, tokenizer="o200k_base")
