"""A sub-agent in the app: its panel under its `task` call (gauge and steps, fed by its own events),
and /agents listing it and opening its transcript from its own log."""

from __future__ import annotations

from pathlib import Path

import pytest
from ctxagent.agent.factory import create_agent
from ctxagent.tui.agents_screen import AgentTranscriptScreen
from ctxagent.tui.app import CtxApp
from ctxagent.tui.chat import ToolPanel
from ctxagent.tui.pickers import InfoModal
from ctxagent.tui.subagent_panel import SubAgentPanel
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
    from ctxagent.tui.modals import PermissionModal
    from tui_helpers import ScreenHost, screen_text

    req = PermissionRequest("c1", "write_file", "edit", {"path": "a.py"}, "a.py (1 lines)", agent="sub-agent 20260101-000000-abcdef (tidy)")
    app = ScreenHost(lambda: PermissionModal(req))
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause()
        assert "The sub-agent 20260101-000000-abcdef (tidy) wants to edit a file: write_file" in screen_text(app)
