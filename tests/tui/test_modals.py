"""Permission modal, breakpoint bar and modal, confirm and info modals — driven by keys and clicks."""

from __future__ import annotations

import pytest
from ctxagent.agent.updates import PermissionDecision, PermissionRequest
from ctxagent.tui.modals import BreakpointBar, BreakpointModal, PermissionModal
from ctxagent.tui.pickers import ConfirmModal, InfoModal
from tui_helpers import HostApp, ScreenHost, screen_text

pytestmark = pytest.mark.anyio

EDIT = PermissionRequest("c1", "edit_file", "edit", {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"},
                         "a.py\n- x = 1\n+ x = 2")
COMMAND = PermissionRequest("c2", "shell", "command", {"command": "rm -rf build/"}, "rm -rf build/")


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (["y"], PermissionDecision(allow=True)),
        (["a"], PermissionDecision(allow=True, remember=True)),
        (["n"], PermissionDecision(allow=False, reason="")),
        (["escape"], PermissionDecision(allow=False, reason="")),
    ],
)
async def test_permission_keys(keys: list[str], expected: PermissionDecision) -> None:
    app = ScreenHost(lambda: PermissionModal(EDIT))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
    assert app.results == [expected]


async def test_permission_deny_with_reason_and_shows_the_command() -> None:
    app = ScreenHost(lambda: PermissionModal(COMMAND))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "rm -rf build/" in screen_text(app)  # the command is shown before deciding
        await pilot.click("#perm-reason")
        await pilot.press(*"use make clean", "enter")  # letters go to the box, not to y/a/n shortcuts
        await pilot.pause()
    assert app.results == [PermissionDecision(allow=False, reason="use make clean")]


async def test_permission_buttons_by_click() -> None:
    app = ScreenHost(lambda: PermissionModal(EDIT))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.click("#allow_session")
        await pilot.pause()
    assert app.results == [PermissionDecision(allow=True, remember=True)]


@pytest.mark.parametrize(("key", "choice"), [("n", "new_session"), ("c", "compact"), ("x", "continue"), ("escape", "continue")])
async def test_breakpoint_modal_keys(key: str, choice: str) -> None:
    app = ScreenHost(lambda: BreakpointModal(93.0))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "93% full" in screen_text(app)
        await pilot.press(key)
        await pilot.pause()
    assert app.results == [choice]


async def test_breakpoint_bar_is_hidden_until_shown_and_posts_choice() -> None:
    bar = BreakpointBar()
    chosen: list[str] = []

    class Host(HostApp):
        def on_breakpoint_bar_chosen(self, message: BreakpointBar.Chosen) -> None:
            chosen.append(message.choice)

    async with Host(bar).run_test(size=(80, 24)) as pilot:
        assert not bar.shown and (bar.display is False or bar.styles.display == "none")
        bar.show(78)
        await pilot.pause()
        assert bar.shown and bar.styles.display == "block"
        assert "78%" in screen_text(pilot.app)
        await pilot.click("#bp-compact")
        await pilot.pause()
        assert chosen == ["compact"] and not bar.shown
        bar.show(80)
        await pilot.pause()
        await pilot.click("#bp-later")
        await pilot.pause()
        assert chosen == ["compact", "later"]


async def test_confirm_and_info_modals() -> None:
    app = ScreenHost(lambda: ConfirmModal("Overwrite a.py?", "a.py"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
    assert app.results == [True]
    app = ScreenHost(lambda: ConfirmModal("Overwrite a.py?"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [False]
    app = ScreenHost(lambda: InfoModal("## Title\n\nbody 中文"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, InfoModal)
        await pilot.press("q")
        await pilot.pause()
        assert not isinstance(app.screen, InfoModal)
