"""A sub-agent in the app: its panel under its `task` call (gauge and steps, fed by its own events),
and /agents listing it and opening its transcript from its own log."""

from __future__ import annotations

from pathlib import Path

import pytest
from ctxagent.agent.factory import create_agent
from ctxagent.tui.app.app import CtxApp
from ctxagent.tui.app.screens.agents_screen import AgentTranscriptScreen
from ctxagent.tui.app.screens.pickers import InfoModal
from ctxagent.tui.app.widgets.chat import ToolPanel
from ctxagent.tui.app.widgets.subagent_panel import SubAgentPanel
from textual.widgets import Markdown
from tui_helpers import make_session, ready, send, wait_until

TASK = "look around"
SCRIPT = {
    "turns": [{"tool_calls": [{"name": "task", "arguments": {"description": TASK, "prompt": "list the files"}}]},
              {"text": "the sub-agent looked"}],
    "agents": {TASK: [{"tool_calls": [{"name": "list_files", "arguments": {}}]}, {"text": "there are a few files"}]},
}


@pytest.mark.anyio
async def test_the_sub_agent_panel_and_agents_command(tmp_path: Path) -> None:
    session = make_session(tmp_path, SCRIPT)  # type: ignore[arg-type]  # a script with "agents" is an object
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "look")
        panels = list(screen.query(SubAgentPanel))
        assert len(panels) == 1
        panel = panels[0]
        assert panel.state == "end_turn" and len(panel.steps) == 2 and "list_files" in panel.steps[0]
        assert panel.window > 0 and panel.used > 0  # its own gauge, from its own builds
        children = list(panel.parent.children)  # type: ignore[union-attr]  # mounted in the chat log
        task_panel = children[children.index(panel) - 1]
        assert isinstance(task_panel, ToolPanel) and task_panel.call_id == panel.call_id
        screen.input.value = "/agents"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, InfoModal))
        shown = app.screen.query_one(Markdown)
        assert panel.session in app.screen.markdown and TASK in app.screen.markdown and shown is not None
        await pilot.press("escape")
        screen.input.value = f"/agents {panel.session[:17]}"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, AgentTranscriptScreen))
        inner = [p.tool_name for p in app.screen.query(ToolPanel)]
        assert inner == ["list_files"]  # the child's own call, not the parent's task


@pytest.mark.anyio
async def test_the_permission_modal_names_the_sub_agent_that_asks() -> None:
    from ctxagent.agent.updates import PermissionRequest
    from ctxagent.tui.app.screens.modals import PermissionModal
    from tui_helpers import ScreenHost, screen_text

    req = PermissionRequest("c1", "write_file", "edit", {"path": "a.py"}, "a.py (1 lines)", agent="sub-agent 20260101-000000-abcdef (tidy)")
    app = ScreenHost(lambda: PermissionModal(req))
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause()
        assert "The sub-agent 20260101-000000-abcdef (tidy) wants to edit a file: write_file" in screen_text(app)


HOLD = "hold"


def _holding_script(names: list[str]) -> dict:
    calls = [{"name": "task", "arguments": {"description": n, "prompt": f"wait for {n}", "tools": [HOLD]}} for n in names]
    return {"turns": [{"tool_calls": calls}, {"text": "after the cancel"}],
            "agents": {n: [{"tool_calls": [{"name": HOLD, "arguments": {}}]}, {"text": f"{n} finished"}] for n in names}}


def _holding_factory(started: list[str]):  # type: ignore[no-untyped-def]  # the app's make_agent
    import threading

    from ctxagent.tools.contract import FunctionTool, NoArgs, ToolContext, ToolResult

    lock = threading.Lock()

    def hold(_: NoArgs, ctx: ToolContext) -> ToolResult:
        with lock:
            started.append(ctx.services.session)
        assert ctx.cancel is not None
        ctx.cancel.wait(120)  # runs until the user cancels (bounded, so a broken cancel fails the test, never hangs it)
        return ToolResult("stopped by the cancel", is_error=True)

    def make(session, **kw):  # type: ignore[no-untyped-def]
        agent = create_agent(session, **kw)
        agent.parts.registry.add(FunctionTool(HOLD, "wait until cancelled", NoArgs, "read", hold))
        return agent

    return make


@pytest.mark.parametrize("names", [["alone"], ["left", "right"]], ids=["one", "two-in-parallel"])
@pytest.mark.anyio
async def test_ctrl_c_cancels_running_sub_agents_and_the_session_goes_on(tmp_path: Path, names: list[str]) -> None:
    from ctxagent.agent.subagents.report import child_rows
    from ctxagent.context.history import SessionLog
    from ctxagent.tui.app.screens.agents_screen import agents_markdown
    from ctxagent.tui.app.widgets.reply import AssistantMessage

    started: list[str] = []
    session = make_session(tmp_path, _holding_script(names))  # type: ignore[arg-type]  # a script with "agents"
    app = CtxApp(session, _holding_factory(started))
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await ready(pilot, app)
        screen.input.value = "wait for them"
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(started) == len(names) and len(list(screen.query(SubAgentPanel))) == len(names))
        panels = list(screen.query(SubAgentPanel))
        assert all(p.state == "running" for p in panels)
        await pilot.press("ctrl+c")  # the app's cancel: interrupts the turn, and with it every sub-agent
        await wait_until(pilot, lambda: not screen.busy)
        await wait_until(pilot, lambda: all(p.state == "cancelled" for p in panels))
        assert all("cancelled" in str(p.title) for p in panels)
        assert {p.description for p in panels} == set(names)
        # the parent's log: every task call answered, each naming its cancelled child
        parent = SessionLog.load(session.log.path)
        assert not parent.skipped_lines
        calls = [c.id for e in parent.of_kind("assistant") for c in e.assistant.tool_calls]
        results = [e.tool_result for e in parent.of_kind("tool_result")]
        assert [r.call_id for r in results] == calls
        rows = child_rows(parent)
        assert len(rows) == len(names) and all(r.stop_reason == "cancelled" and r.cost is not None for r in rows)
        for row in rows:  # each child's log reopens whole, linked to its call, every call of its own answered
            child = SessionLog.load(session.log.path.parent / "subagents" / f"{row.session}.jsonl")
            assert not child.skipped_lines and child.events[0].data["parent"] == session.id
            assert child.events[0].data["parent_call"] in calls
            answered = {e.tool_result.call_id for e in child.of_kind("tool_result")}
            assert {c.id for e in child.of_kind("assistant") for c in e.assistant.tool_calls} <= answered
        assert agents_markdown(parent, []).count("| cancelled |") == len(names)
        # /agents opens a cancelled one's transcript from its own log
        screen.input.value = f"/agents {rows[0].session}"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, AgentTranscriptScreen))
        assert [p.tool_name for p in app.screen.query(ToolPanel)] == [HOLD]
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is screen)
        # and the loop goes on
        await send(pilot, app, "go on")
        assert screen.query(AssistantMessage).last().text == "after the cancel"
