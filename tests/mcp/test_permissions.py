"""An MCP call asks like `shell`; "allow for this session" covers that tool with those exact arguments."""

from __future__ import annotations

from ctxagent.agent.mcp.runtime import start_mcp
from ctxagent.agent.updates import McpStatus, PermissionDecision, PermissionRequest
from ctxagent.tools.sandbox import SandboxPolicy

from .conftest import stdio_server


def test_allow_for_session_covers_only_the_same_arguments(make_agent, work_repo) -> None:
    asked: list[PermissionRequest] = []

    def approver(req: PermissionRequest) -> PermissionDecision:
        asked.append(req)
        return PermissionDecision(allow=True, remember=True)

    call = {"name": "mcp__fx__reverse", "arguments": {"text": "ab"}}
    agent, events, _ = make_agent([
        {"tool_calls": [call]}, {"tool_calls": [call]},
        {"tool_calls": [{"name": "mcp__fx__reverse", "arguments": {"text": "rm -rf"}}]},
        {"text": "done"},
    ], approver=approver, mode="ask")
    runtime = start_mcp({"fx": stdio_server(sandbox=False)}, work_repo, SandboxPolicy(), agent.parts.registry,
                        counter=agent.parts.counter, window=64_000, share=0.1, on_event=events.append)
    assert runtime is not None
    try:
        runtime.hub.wait_started()
        agent.run_turn("go")
    finally:
        runtime.close()
    assert [r.arguments for r in asked] == [{"text": "ab"}, {"text": "rm -rf"}]
    assert asked[0].permission == "command" and '"text": "ab"' in asked[0].preview
    results = [e.content for e in events if type(e).__name__ == "ToolFinished"]
    assert results == ["ba", "ba", "fr- mr"]
    assert any(isinstance(e, McpStatus) and e.state == "ready" and e.tools >= 7 for e in events)
    rows = {r.name: r for r in runtime.rows()}
    assert rows["fx"].tokens > 0 and ("mcp__fx__reverse", rows["fx"].tools[0][1]) in rows["fx"].tools
