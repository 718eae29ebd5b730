"""/handoff and the model's handoff tool in the app: the draft opens in the editor; the user edits and
confirms it (a new session, child of this one, whose first message is the edited text) or cancels it."""

from __future__ import annotations

from pathlib import Path

import pytest
from ctxagent.agent.factory import create_agent
from ctxagent.tui.app.app import CtxApp
from ctxagent.tui.app.screens.handoff import HandoffModal
from textual.widgets import TextArea
from tui_helpers import answer, make_session, ready, screen_text, send, wait_until

pytestmark = pytest.mark.anyio

FIRST = "Port the parser to streaming. Never edit files under config/.\nTODO: benchmark the old parser first"


def _modal(app: CtxApp) -> HandoffModal | None:
    return app.screen if isinstance(app.screen, HandoffModal) else None


async def test_slash_handoff_edit_and_confirm_opens_the_new_session_with_the_text(tmp_path: Path) -> None:
    session = make_session(tmp_path, [{"text": "On it."}, {"text": "Picked up from the handoff."}])
    old_id = session.id
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, FIRST)
        screen.input.value = "/handoff finish the streaming port"
        await pilot.press("enter")
        await wait_until(pilot, lambda: _modal(app) is not None)
        modal = _modal(app)
        assert modal is not None
        area = modal.query_one(TextArea)
        assert "Goal: finish the streaming port" in area.text and "- Never edit files under config/." in area.text
        assert "Goal: finish the streaming port" in screen_text(app)
        area.text = area.text + "\nAlso keep the changelog short 保持简短."  # the user's edit
        await answer(pilot, "ctrl+s")
        await wait_until(pilot, lambda: app.session_screen.session.id != old_id and not app.session_screen.busy
                         and bool(app.session_screen.session.log.of_kind("assistant")), timeout=60)
        new = app.session_screen.session
        users = [e.user.text for e in new.log.events if e.kind == "user"]
        assert len(users) == 1 and users[0].endswith("Also keep the changelog short 保持简短.")
        assert "Goal: finish the streaming port" in users[0]
        assert new.log.events[0].data.get("parent") == old_id
        # the draft was logged in the old session
        assert session.log.of_kind("handoff")[-1].data["goal"] == "finish the streaming port"


async def test_cancel_starts_nothing_and_says_so(tmp_path: Path) -> None:
    session = make_session(tmp_path, [{"text": "On it."}])
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, FIRST)
        screen.input.value = "/handoff"
        await pilot.press("enter")
        await wait_until(pilot, lambda: _modal(app) is not None)
        await pilot.press("escape")
        await wait_until(pilot, lambda: _modal(app) is None)
        assert app.session_screen.session.id == session.id
        (logged,) = session.log.of_kind("handoff")
        assert "handoff cancelled: nothing started" in screen_text(app) and f"event {logged.id}" in screen_text(app)


async def test_the_models_handoff_tool_opens_the_editor_too(tmp_path: Path) -> None:
    script = [{"text": "Handing off.", "tool_calls": [{"name": "handoff", "arguments": {"goal": "write the benchmark"}}]},
              {"text": "Drafted."}]
    session = make_session(tmp_path, script)
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 40)) as pilot:
        await ready(pilot, app)
        app.session_screen.input.value = FIRST
        await pilot.press("enter")
        await wait_until(pilot, lambda: _modal(app) is not None)
        modal = _modal(app)
        assert modal is not None and modal.draft.by == "model"
        assert "Goal: write the benchmark" in modal.query_one(TextArea).text
        modal.query_one(TextArea).text = "   "
        await answer(pilot, "ctrl+s")  # an empty message is refused: the editor stays
        await pilot.pause()
        assert _modal(app) is not None
        await pilot.click("#cancel")
        await wait_until(pilot, lambda: _modal(app) is None and not app.session_screen.busy)
        assert app.session_screen.session.id == session.id
