"""Plan mode in the app: Shift+Tab cycles the permission mode (shown in the status bar); a turn that
ends in plan mode opens the plan box — accept switches to the edit mode and sends the plan as the next
message (the edit then runs), keep planning leaves everything as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from ctxagent.agent.factory import create_agent
from ctxagent.tui.app import CtxApp
from ctxagent.tui.plan import PlanModal
from tui_helpers import answer, make_session, ready, screen_text, send, wait_until

pytestmark = pytest.mark.anyio

PLAN = "Plan: change `a - b` to `a + b` in calc.py, then run the tests. 计划完成。"
EDIT = {"name": "edit_file", "arguments": {"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}}


async def test_shift_tab_cycles_the_mode_and_the_status_bar_shows_plan(tmp_path: Path) -> None:
    session = make_session(tmp_path, [{"text": "hi"}], permission_mode="ask")
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(110, 30)) as pilot:
        screen = await ready(pilot, app)
        modes = []
        for _ in range(3):
            await pilot.press("shift+tab")
            await pilot.pause()
            modes.append(screen.session.config.permission_mode)
            if modes[-1] == "plan":
                assert "plan: read-only" in screen_text(app)
        assert modes == ["auto-edit", "plan", "ask"]
        assert "plan: read-only" not in screen_text(app)
        assert "permission mode: ask — every edit and command is asked" in screen_text(app)


async def test_accepting_the_plan_switches_mode_and_carries_it_out(tmp_path: Path) -> None:
    session = make_session(tmp_path, [{"tool_calls": [EDIT]}, {"text": PLAN}, {"tool_calls": [EDIT]}, {"text": "Done."}],
                           permission_mode="plan")
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot, app)
        await send(pilot, app, "fix add")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanModal))
        assert "计划完成" in screen_text(app)
        calc = session.root / "calc.py"
        assert "a - b" in calc.read_text()  # the plan turn's edit was refused
        await answer(pilot, "e")
        screen = app.session_screen
        await wait_until(pilot, lambda: not screen.busy and len(screen.session.log.of_kind("user")) == 2, timeout=60)
        await wait_until(pilot, lambda: not screen.busy)
        assert screen.session.config.permission_mode == "auto-edit"
        assert "a + b" in calc.read_text()
        second = screen.session.log.of_kind("user")[-1].user
        assert PLAN in second.text and not second.plan


async def test_keep_planning_changes_nothing(tmp_path: Path) -> None:
    session = make_session(tmp_path, [{"text": PLAN}], permission_mode="plan")
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(110, 36)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "plan the fix")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanModal))
        await answer(pilot, "escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, PlanModal))
        assert screen.session.config.permission_mode == "plan"
        assert len(screen.session.log.of_kind("user")) == 1
        assert "still planning" in screen_text(app)
