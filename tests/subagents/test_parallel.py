"""Several `task` calls of one step run together (at most 3), their results logged in call order;
a cancel stops every running sub-agent, and every log stays answerable."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from ctxagent.agent.config import MAX_PARALLEL, Config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session
from ctxagent.agent.updates import AgentEvent, SubAgentUpdate, ToolStarted
from ctxagent.context.history import SessionLog
from ctxagent.tools.contract import FunctionTool, NoArgs, ToolContext, ToolResult

NAMES = ["alpha", "beta", "gamma", "delta", "epsilon"]


def script(tool: str) -> dict[str, Any]:
    calls = [{"name": "task", "arguments": {"description": n, "prompt": f"do {n}", "tools": [tool]}} for n in NAMES]
    return {"turns": [{"tool_calls": calls}, {"text": "all done"}],
            "agents": {n: [{"tool_calls": [{"name": tool, "arguments": {}}]}, {"text": f"{n} finished"}] for n in NAMES}}


def agent_for(repo: Path, tmp_path: Path, tool: str, extra: FunctionTool[NoArgs], events: list[AgentEvent],
              **config: Any) -> Any:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script(tool)))
    session = open_session(repo, Config(model=f"scripted:{path}", memory=False, **config))
    agent = create_agent(session, on_event=events.append)
    agent.parts.registry.add(extra)
    return agent


def child_logs(repo: Path) -> list[SessionLog]:
    return [SessionLog.load(p) for p in sorted((repo / ".ctxagent" / "sessions" / "subagents").glob("*.jsonl"))]


@pytest.mark.parametrize("limit", [None, 2])  # the default (3), and config `subagent_parallel`
def test_task_calls_run_together_bounded_and_come_back_in_call_order(work_repo: Path, tmp_path: Path,
                                                                      limit: int | None) -> None:
    bound = limit or MAX_PARALLEL
    lock, active, peak, arrivals = threading.Lock(), [0], [0], [0]
    barrier = threading.Barrier(bound, timeout=30)  # passes only if `bound` sub-agents are in it at once

    def rendezvous(_: NoArgs, ctx: ToolContext) -> ToolResult:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            arrivals[0] += 1
            first_ones = arrivals[0] <= bound
        try:
            if first_ones:
                barrier.wait()
            return ToolResult("met")
        finally:
            with lock:
                active[0] -= 1

    events: list[AgentEvent] = []
    config = {} if limit is None else {"subagent_parallel": limit}
    agent = agent_for(work_repo, tmp_path, "rendezvous", FunctionTool("rendezvous", "meet", NoArgs, "read", rendezvous), events,
                      **config)
    done = agent.run_turn("go")
    assert done.stop_reason == "end_turn" and done.text == "all done"
    assert peak[0] == bound  # that many at once, never more
    calls = agent.log.of_kind("assistant")[0].assistant.tool_calls
    results = [e.tool_result for e in agent.log.of_kind("tool_result")]
    assert [r.call_id for r in results] == [c.id for c in calls]  # logged in call order
    for name, r in zip(NAMES, results, strict=True):
        assert not r.is_error and f"{name} finished" in r.content, r.content
    children = {log.events[0].data["parent_call"]: log for log in child_logs(work_repo)}
    assert set(children) == {c.id for c in calls}
    for log in children.values():
        assert [e.tool_result.content for e in log.of_kind("tool_result")] == ["met"]
    # the children's events reached the parent's stream under their call ids
    forwarded = {ev.call_id for ev in events if isinstance(ev, SubAgentUpdate)}
    assert forwarded == {c.id for c in calls}
    assert [ev.call_id for ev in events if isinstance(ev, ToolStarted)][:5] == [c.id for c in calls]


def test_cancel_stops_every_running_sub_agent_and_leaves_consistent_logs(work_repo: Path, tmp_path: Path) -> None:
    cancel = threading.Event()
    waiting = threading.Semaphore(0)

    def hold(_: NoArgs, ctx: ToolContext) -> ToolResult:
        waiting.release()
        ctx.cancel.wait(30)
        return ToolResult("interrupted by the cancel", is_error=True)

    events: list[AgentEvent] = []
    agent = agent_for(work_repo, tmp_path, "hold", FunctionTool("hold", "wait", NoArgs, "read", hold), events)
    out: list[Any] = []
    runner = threading.Thread(target=lambda: out.append(agent.run_turn("go", cancel)))
    runner.start()
    for _ in range(MAX_PARALLEL):
        assert waiting.acquire(timeout=30)
    cancel.set()
    runner.join(60)
    assert not runner.is_alive() and out[0].stop_reason == "cancelled"
    results = [e.tool_result for e in agent.log.of_kind("tool_result")]
    assert len(results) == len(NAMES)  # every task call answered
    subs = [r for r in results if r.meta.model_extra and "subagent" in r.meta.model_extra]
    assert len(subs) == MAX_PARALLEL  # the three running ones; the other two never started
    assert all(r.meta.model_extra["subagent"]["stop_reason"] == "cancelled" for r in subs)  # type: ignore[index]  # checked above
    assert all("cancelled" in r.content for r in results)
    for log in child_logs(work_repo):
        answered = {e.tool_result.call_id for e in log.of_kind("tool_result")}
        assert {c.id for e in log.of_kind("assistant") for c in e.assistant.tool_calls} <= answered
