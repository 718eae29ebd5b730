"""A newcomer's second hour, the smaller things (issue 24, item 10), as a user meets them in the app:
the real Agent, tools, session log and sandbox, with the in-process scripted model."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session
from ctxagent.tui.app.app import CtxApp
from ctxagent.tui.app.screens.modals import BreakpointBar, PermissionModal, TrustModal
from ctxagent.tui.app.screens.pickers import InfoModal
from ctxagent.tui.app.widgets.chat import NoticeLine, ToolPanel, UserMessage
from ctxagent.tui.app.widgets.gauge import UsageGauge
from ctxagent.tui.app.widgets.status import StatusInfo, format_status
from tui_helpers import (
    HostApp,
    answer,
    make_repo,
    make_report,
    make_session,
    ready,
    screen_text,
    send,
    wait_until,
)

pytestmark = pytest.mark.anyio

ANSWER = [{"text": "Answered."}] * 6
SHELL = [{"text": "Running it.", "tool_calls": [{"name": "shell", "arguments": {"command": "touch made.txt"}}]},
         {"text": "Done."}]


def notices(screen: Any) -> list[NoticeLine]:
    return list(screen.chat.query(NoticeLine))


# -- start-up -------------------------------------------------------------------------------------

async def test_an_enter_that_nothing_focused_took_sends_the_input(tmp_path: Path) -> None:
    """Type-ahead before the first frame: the characters land in the input (the screen takes them), and
    so must the Enter after them — it sends, as it would have in the box."""
    session = make_session(tmp_path, ANSWER)
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await ready(pilot, app)
        screen.set_focus(None)  # as before the input had focus
        await pilot.press(*"typed early")
        assert screen.input.value == "typed early"
        screen.set_focus(None)
        await pilot.press("enter")
        await wait_until(pilot, lambda: not screen.busy and bool(session.log.of_kind("assistant")))
        assert [e.data["text"] for e in session.log.of_kind("user")] == ["typed early"]
        assert screen.input.value == ""
        # typed ahead before the terminal left cooked mode, Enter arrives as Ctrl+J (CR turned into LF)
        screen.input.value = "and again"
        screen.set_focus(None)
        await pilot.press("ctrl+j")
        await wait_until(pilot, lambda: not screen.busy and len(session.log.of_kind("assistant")) == 2)
        assert [e.data["text"] for e in session.log.of_kind("user")] == ["typed early", "and again"]
        # in the box itself Ctrl+J is still a new line
        screen.input.focus()
        await pilot.pause()
        await pilot.press("a", "ctrl+j", "b")
        assert screen.input.value == "a\nb"


async def test_the_status_never_says_idle_before_the_agent_is_ready(tmp_path: Path) -> None:
    """From the first frame until the agent is built the status says it is starting; with the trust
    question open it says what it waits for."""
    session = make_session(tmp_path, ANSWER)
    release = threading.Event()
    seen: list[str] = []

    def slow_agent(sess: Any, **kw: Any) -> Any:
        release.wait(30)
        return create_agent(sess, **kw)

    app = CtxApp(session, slow_agent)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = app.session_screen
        seen.append(screen.status.info.activity)  # the very first state, before any pause
        await pilot.pause()
        seen.append(screen.status.info.activity)
        line = [ln for ln in screen_text(app).splitlines() if "scripted" in ln][-1]
        assert "◐ starting" in line and "idle" not in line
        release.set()
        await ready(pilot, app)
        assert screen.status.info.activity == "idle"
    assert "idle" not in seen and set(seen) == {"starting"}


async def test_the_status_says_it_waits_for_the_trust_answer(tmp_path: Path) -> None:
    from ctxagent.agent.config import load_config

    repo = make_repo(tmp_path / "repo")
    (repo / ".ctxagent").mkdir()
    (repo / ".ctxagent" / "config.toml").write_text('permission_mode = "yolo"\n', encoding="utf-8")
    script = tmp_path / "script.json"
    script.write_text('[{"text": "hi"}]', encoding="utf-8")
    flags = {"model": f"scripted:{script}"}
    app = CtxApp(open_session(repo, load_config(repo, flags)), create_agent, reload_config=lambda: load_config(repo, flags))
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, TrustModal))
        screen = app.session_screen
        assert screen.status.info.activity.startswith("waiting for your answer")
        assert "● idle" not in screen_text(app)
        await pilot.press("escape")
        await ready(pilot, app)
        assert screen.status.info.activity == "idle"


# -- interrupting ---------------------------------------------------------------------------------

async def test_ctrl_c_during_a_429_back_off_is_a_cancel_not_an_error(tmp_path: Path) -> None:
    session = make_session(tmp_path, [{"fault": "429", "retry_after": 30}, {"text": "never sent"}])
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await ready(pilot, app)
        screen.input.value = "hello"
        await pilot.press("enter")
        await wait_until(pilot, lambda: any("retrying in" in n.message for n in notices(screen)))
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: not screen.busy)
        said = notices(screen)
        assert any("interrupted" in n.message for n in said)
        assert not [n.message for n in said if n.level == "error"]
        assert not session.log.of_kind("error")  # nothing went wrong: the user stopped it
        assert "✗" not in screen_text(app)


# -- the gauge ------------------------------------------------------------------------------------

async def test_the_percentage_never_shows_a_breakpoint_the_usage_has_not_reached() -> None:
    """89.9 % is under the 90 % breakpoint: the gauge says 89 %, with the 75 % level's words."""
    gauge = UsageGauge()
    bar = BreakpointBar()
    async with HostApp(gauge, bar).run_test(size=(120, 10)) as pilot:
        gauge.update_report(make_report(89.9))
        bar.show(89.9)
        await pilot.pause()
        line = gauge.render().plain.splitlines()[0]
        assert " 89% ▲ compact soon" in line and "90%" not in line and "FULL" not in line
        assert "Context 89% full" in screen_text(pilot.app)
        gauge.update_report(make_report(90.0))
        await pilot.pause()
        assert " 90% ■ FULL" in gauge.render().plain


async def test_status_and_gauge_items_say_what_they_are() -> None:
    status = format_status(StatusInfo(model="anthropic:claude-sonnet-5-5", session="s1", calibration=1.18), 160)
    assert "calibration ×1.18" in status.plain and "cal ×" not in status.plain
    gauge = UsageGauge()
    async with HostApp(gauge).run_test(size=(120, 10)) as pilot:
        gauge.update_report(make_report(40, red_flags=["tool results are 70% of the prompt"]))
        gauge.update_report(make_report(60, red_flags=["tool results are 70% of the prompt"]))
        await pilot.pause()
        first, legend = gauge.render().plain.splitlines()
        assert "per step ▄▅" in first
        assert "⚑ 1 red flag" in legend


async def test_later_is_on_ctrl_g_and_ctrl_l_leaves_the_bar(tmp_path: Path) -> None:
    app = CtxApp(make_session(tmp_path, ANSWER), create_agent)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await ready(pilot, app)
        screen.bar.show(80.0)
        await pilot.pause()
        assert "Later ^G" in screen_text(app) and "^L" not in screen_text(app)
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert screen.bar.shown  # Ctrl+L is the terminal's clear-screen, not an answer
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert not screen.bar.shown


# -- tools ----------------------------------------------------------------------------------------

async def test_a_denied_tool_says_denied_and_not_the_time_spent_deciding(tmp_path: Path) -> None:
    session = make_session(tmp_path, SHELL, permission_mode="ask")
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(110, 30)) as pilot:
        screen = await ready(pilot, app)
        screen.input.value = "make the file"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal))
        asked = time.monotonic()
        await answer(pilot, "3")  # after the box's guard time: the user took at least that long
        waited_ms = (time.monotonic() - asked) * 1000
        await wait_until(pilot, lambda: not screen.busy)
        (panel,) = [p for p in screen.query(ToolPanel) if p.tool_name == "shell"]
        assert panel.status == "denied" and "⊘ shell" in screen_text(app)
        assert "error" not in panel.title and not panel.has_class("-error")
        assert panel.duration_ms is not None and panel.duration_ms < waited_ms
        logged = session.log.of_kind("tool_result")[-1].data
        assert logged["meta"]["denied"] is True and logged["duration_ms"] < waited_ms
        assert not (session.root / "made.txt").exists()
    session.log.close()
    app = CtxApp(open_session(session.root, session.config, session.id), create_agent)
    async with app.run_test(size=(110, 30)) as pilot:  # the same from the log (a resume)
        screen = await ready(pilot, app)
        (panel,) = [p for p in screen.query(ToolPanel) if p.tool_name == "shell"]
        assert panel.status == "denied"


async def test_a_bang_command_is_the_users_own_not_asked_and_still_sandboxed(tmp_path: Path) -> None:
    session = make_session(tmp_path, ANSWER, permission_mode="ask")
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(110, 30)) as pilot:
        await ready(pilot, app)
        await send(pilot, app, "!touch made-by-bang.txt")
        assert not isinstance(app.screen, PermissionModal)
        assert (session.root / "made-by-bang.txt").exists()
        assert not session.log.of_kind("permission") and "wants to run" not in screen_text(app)
        await send(pilot, app, "!touch .git/planted-hook")  # the sandbox still holds: .git is read-only
        assert not (session.root / ".git" / "planted-hook").exists()
        refused = session.log.of_kind("tool_result")[-1].data
        assert refused["meta"].get("exit_code") not in (None, 0), refused


async def test_a_mention_of_a_missing_file_is_said(tmp_path: Path) -> None:
    session = make_session(tmp_path, ANSWER)
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "compare @calc.py with @missing.py")
        said = [n.message for n in notices(screen)]
        assert any(m.startswith("@missing.py: not attached — no such file") for m in said)
        assert not any("calc.py:" in m for m in said)
        results = session.log.of_kind("tool_result")
        assert [r.data["name"] for r in results] == ["read_file"]  # calc.py is attached
        assert "@missing.py: not attached" in screen_text(app)


# -- the transcript -------------------------------------------------------------------------------

async def test_a_long_paste_is_folded_in_the_chat_and_sent_whole(tmp_path: Path) -> None:
    session = make_session(tmp_path, ANSWER)
    app = CtxApp(session, create_agent)
    pasted = "\n".join(f"log line {i:04d}" for i in range(1, 1601))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, pasted)
        (shown,) = screen.chat.query(UserMessage)
        assert shown.folded and shown.text == pasted
        text = screen_text(app)
        assert "log line 0001" in text and "log line 0800" not in text
        assert "1,594 more lines (1,600 in all" in text
        sent = screen.agent.parts.provider.requests[-1]
        assert "log line 1600" in str(sent["messages"])  # the model gets all of it


async def test_help_shows_the_keys_first_at_40_rows(tmp_path: Path) -> None:
    app = CtxApp(make_session(tmp_path, ANSWER), create_agent)
    async with app.run_test(size=(100, 40)) as pilot:
        await ready(pilot, app)
        await send(pilot, app, "/help")
        await wait_until(pilot, lambda: isinstance(app.screen, InfoModal))
        text = screen_text(app)
        assert "Keys" in text and "Esc interrupt" in text and "Ctrl+Q quit" in text
        assert "Ctrl+G" in text


# -- sessions -------------------------------------------------------------------------------------

async def test_the_resume_picker_shows_turns_and_model(tmp_path: Path) -> None:
    session = make_session(tmp_path, ANSWER)
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(140, 30)) as pilot:
        await ready(pilot, app)
        await send(pilot, app, "first question")
        await send(pilot, app, "second question")
        await send(pilot, app, "/resume")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "SessionPicker")
        row = next(ln for ln in screen_text(app).splitlines() if session.id in ln)
        assert "2 turns" in row and "scripted:" in row and "first question" in row


# -- leaving with a question open -----------------------------------------------------------------

@pytest.mark.parametrize("how", ["ctrl+q", "/quit", "exit"])
async def test_leaving_with_a_permission_box_open_denies_it_and_ends_the_worker(tmp_path: Path, how: str) -> None:
    """However the app closes — Ctrl+Q, /quit (from the palette: the box has the keyboard), or an
    exit from elsewhere — the permission asked is denied and the turn's worker ends."""
    session = make_session(tmp_path, SHELL, permission_mode="ask")
    app = CtxApp(session, create_agent)
    screen = None
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            screen = await ready(pilot, app)
            screen.input.value = "make the file"
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal))
            if how == "ctrl+q":
                await pilot.press("ctrl+q")
            elif how == "/quit":
                from ctxagent.tui.app.slash import run_slash

                run_slash(screen, "/quit")
            else:
                app.exit(0)
            await pilot.pause()
        deadline = time.monotonic() + 20
        while not session.log.of_kind("tool_result") and time.monotonic() < deadline:
            time.sleep(0.05)
        (decision,) = session.log.of_kind("permission")
        assert decision.data["decision"] == "deny" and "closing" in decision.data["reason"]
        assert session.log.of_kind("tool_result")[-1].data["meta"]["denied"] is True
        assert not (session.root / "made.txt").exists()
        assert app.return_value == 0
    finally:
        if screen is not None:
            screen.stopping = True  # never leave a worker waiting, whatever the outcome
