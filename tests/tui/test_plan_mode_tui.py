"""Plan mode in the app: Shift+Tab cycles the permission mode (shown in the status bar); a turn that
ends in plan mode opens the plan box — accept switches to the edit mode and sends the plan as the next
message (the edit then runs), keep planning leaves everything as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from ctxagent.agent.factory import create_agent
from ctxagent.tui.app.app import CtxApp
from ctxagent.tui.app.screens.plan import PlanModal
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
        await answer(pilot, "2")  # accept, edits unasked
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


def _modes(log_path: Path) -> list[tuple[int, str]]:
    """(event id, mode) of each permission_mode event, read from the file by hand."""
    import json

    lines = [json.loads(ln) for ln in log_path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    return [(e["id"], e["data"]["mode"]) for e in lines if e["kind"] == "permission_mode"]


async def test_a_mode_switched_with_shift_tab_is_logged_and_a_resume_keeps_it_only_below_the_config(
        tmp_path: Path) -> None:
    """Shift+Tab's mode is in the log, before the steps that ran under it; a resume returns to it when
    it lets no more run than the config does (plan under ask), and stays on the config's otherwise
    (auto-edit under ask): a log in the repository never raises permissions."""
    import argparse

    from ctxagent.tui.app.app import config_from_args, open_from_args
    from ctxagent.tui.app.widgets.chat import NoticeLine

    session = make_session(tmp_path, [{"text": "a plan"}] * 3, permission_mode="ask")
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(110, 30)) as pilot:
        await ready(pilot, app)
        await send(pilot, app, "hello")
        for _ in range(2):
            await pilot.press("shift+tab")  # ask → auto-edit → plan
            await pilot.pause()
        await send(pilot, app, "what would you do?")
        if isinstance(app.screen, PlanModal):
            await answer(pilot, "3")  # keep planning: the mode stays plan
    session.log.close()
    modes = _modes(session.log.path)
    assert [m for _, m in modes] == ["auto-edit", "plan"]
    events = session.log.events
    second_user = [e.id for e in events if e.kind == "user"][1]
    assert modes[-1][0] < second_user  # logged when switched, ahead of the turn that ran under it

    # resumed with the config's mode (ask) and no --permission-mode: plan asks less of nobody — kept
    args = argparse.Namespace(resume=session.id, cwd=str(session.root), permission_mode=None)
    resumed = open_from_args(args)
    assert resumed.config.permission_mode == "plan"
    assert config_from_args(args, resumed).permission_mode == "plan"  # the same after a trust reload
    app = CtxApp(resumed, create_agent, probe=False)
    async with app.run_test(size=(110, 30)) as pilot:
        screen = await ready(pilot, app)
        assert any(n.message.startswith("permission mode: plan, as this session last ran") for n in screen.query(NoticeLine))
        await pilot.press("shift+tab")  # plan → ask
        await pilot.pause()
        await pilot.press("shift+tab")  # ask → auto-edit, then leave
        await pilot.pause()
    resumed.log.close()
    assert [m for _, m in _modes(session.log.path)][-1] == "auto-edit"

    # the log now says auto-edit, the config ask: it stays ask, and says so
    again = open_from_args(args)
    assert again.config.permission_mode == "ask"
    assert again.notices == ["this session last ran in auto-edit mode; your config allows ask, so it stays ask "
                             "(a session log never raises permissions)"]
    assert config_from_args(args, again).permission_mode == "ask"
    app = CtxApp(again, create_agent, probe=False)
    async with app.run_test(size=(110, 30)) as pilot:
        screen = await ready(pilot, app)
        assert any("never raises permissions" in n.message for n in screen.query(NoticeLine))
        assert screen.session.config.permission_mode == "ask"
    again.log.close()
    # --permission-mode on the command line wins, as --model does
    named = open_from_args(argparse.Namespace(resume=session.id, cwd=str(session.root), permission_mode="plan"))
    assert named.config.permission_mode == "plan" and named.notices == []
    named.log.close()


async def test_a_note_typed_in_the_plan_box_keeps_planning_and_is_sent(tmp_path: Path) -> None:
    """What to change, typed in the box — its a, e and k, its digits — is the next message, still in plan
    mode; it never accepts the plan (typing is text: tui/app/screens/question.py)."""
    session = make_session(tmp_path, [{"text": PLAN}, {"text": "Plan v2: also add a test. 计划二。"}], permission_mode="plan")
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(110, 36)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "plan the fix")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanModal))
        note = "add a test for 2 + 3 too, keep edits small 别改配置"
        await answer(pilot, *note, "enter")
        await wait_until(pilot, lambda: len(screen.session.log.of_kind("user")) == 2 and not screen.busy, timeout=60)
        await wait_until(pilot, lambda: isinstance(app.screen, PlanModal))  # the model's next plan
        assert screen.session.config.permission_mode == "plan"
        assert screen.session.log.of_kind("user")[-1].user.text == note
        assert "a - b" in (session.root / "calc.py").read_text()
        await answer(pilot, "escape")
