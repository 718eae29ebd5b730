"""Permission modal, breakpoint bar and modal, confirm and info modals — driven by keys and clicks.

Every question is a GuardedModal (tui/app/screens/question.py): nothing focused, keys typed in its first moment
(meant for the prompt) answer nothing, and typing is text (tests/tui/test_typing_is_text.py drives the
whole family)."""

from __future__ import annotations

import pytest
from ctxagent.agent.updates import PermissionDecision, PermissionRequest
from ctxagent.tui.app.screens.modals import BreakpointBar, BreakpointModal, PermissionModal
from ctxagent.tui.app.screens.pickers import ConfirmModal, InfoModal
from textual.widgets import Input
from tui_helpers import HostApp, ScreenHost, screen_text, wait_until

pytestmark = pytest.mark.anyio

EDIT = PermissionRequest("c1", "edit_file", "edit", {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"},
                         "a.py\n- x = 1\n+ x = 2")
COMMAND = PermissionRequest("c2", "shell", "command", {"command": "rm -rf build/"}, "rm -rf build/")


async def _armed(pilot) -> None:
    await wait_until(pilot, lambda: pilot.app.screen.armed)


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (["1"], PermissionDecision(allow=True)),
        (["2"], PermissionDecision(allow=True, remember=True)),
        (["3"], PermissionDecision(allow=False, reason="")),
        (["enter"], PermissionDecision(allow=False, reason="")),  # what the reason field says: Enter denies
        (["escape"], PermissionDecision(allow=False, reason="")),
    ],
)
async def test_permission_keys_after_the_box_was_shown_for_a_moment(keys: list[str], expected: PermissionDecision) -> None:
    app = ScreenHost(lambda: PermissionModal(EDIT))
    async with app.run_test(size=(80, 24)) as pilot:
        await _armed(pilot)
        await pilot.press(*keys)
        await pilot.pause()
    assert app.results == [expected]


def _patient(modal: PermissionModal) -> PermissionModal:
    """A box whose quiet moment is longer than any gap between two keys of a test under load."""
    modal.ARM_SECONDS = 3.0
    return modal


async def test_nothing_is_focused_and_keys_typed_ahead_answer_nothing() -> None:
    app = ScreenHost(lambda: _patient(PermissionModal(COMMAND)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, PermissionModal) and not modal.armed
        assert modal.focused is None  # not [1] Allow once: an Enter meant for the prompt would allow
        # meant for the prompt, typed on while the box appears: however long, none of it answers
        await pilot.press(*"yes and more typing", "enter", *"please", "enter", *"a" * 5, "1", "2", "enter")
        await pilot.pause()
        assert app.results == [] and app.screen is modal and not modal.armed
        assert modal.query_one("#perm-reason", Input).value == ""  # ignored, not kept as a reason
        await _armed(pilot)  # a quiet moment with the box on screen: now a key is an answer
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [PermissionDecision(allow=False, reason="")]


async def test_escape_denies_at_once() -> None:
    app = ScreenHost(lambda: _patient(PermissionModal(COMMAND)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert not app.screen.armed
        await pilot.press("escape")  # no only ever needs no delay
        await pilot.pause()
    assert app.results == [PermissionDecision(allow=False, reason="")]


async def test_a_click_before_the_box_is_armed_presses_nothing() -> None:
    app = ScreenHost(lambda: _patient(PermissionModal(EDIT)))  # under load two pauses can outlast the default
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.click("#allow_once")
        await pilot.pause()
        assert app.results == []
        await _armed(pilot)
        await pilot.click("#allow_session")
        await pilot.pause()
    assert app.results == [PermissionDecision(allow=True, remember=True)]


async def test_letters_after_the_delay_write_the_reason_and_enter_denies_with_it() -> None:
    app = ScreenHost(lambda: PermissionModal(COMMAND))
    async with app.run_test(size=(80, 24)) as pilot:
        await _armed(pilot)
        assert "rm -rf build/" in screen_text(app)  # the command is shown before deciding
        await pilot.press(*"please use make clean", "enter")  # the a of "please" is the reason's, not an answer
        await pilot.pause()
    assert app.results == [PermissionDecision(allow=False, reason="please use make clean")]


async def test_permission_deny_with_a_reason_typed_into_the_field() -> None:
    app = ScreenHost(lambda: PermissionModal(COMMAND))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.click("#perm-reason")
        await pilot.press(*"yes, use make clean", "enter")  # letters go to the box, not to y/a/n shortcuts
        await pilot.pause()
    assert app.results == [PermissionDecision(allow=False, reason="yes, use make clean")]


async def test_a_call_no_allowance_covers_offers_no_allow_for_session() -> None:
    req = PermissionRequest("c3", "write_file", "edit", {"path": "AGENTS.md", "content": "be bold"},
                            "AGENTS.md (1 lines)\nbe bold", target="AGENTS.md",
                            note="AGENTS.md is an instruction file: it becomes part of the agent's instructions.",
                            can_remember=False)
    app = ScreenHost(lambda: PermissionModal(req))
    async with app.run_test(size=(100, 30)) as pilot:
        await _armed(pilot)
        assert "instruction file" in screen_text(app) and "Allow for session" not in screen_text(app)
        assert not app.screen.query("#allow_session")
        await pilot.press("2")  # no answer has that key here: it does nothing (it is no reason either)
        await pilot.pause()
        assert app.results == [] and app.screen.query_one("#perm-reason", Input).value == ""
        await pilot.press("1")
        await pilot.pause()
    assert app.results == [PermissionDecision(allow=True)]


async def test_permission_buttons_by_click() -> None:
    app = ScreenHost(lambda: PermissionModal(EDIT))
    async with app.run_test(size=(100, 30)) as pilot:
        await _armed(pilot)
        await pilot.click("#deny")
        await pilot.pause()
    assert app.results == [PermissionDecision(allow=False, reason="")]


@pytest.mark.parametrize(("key", "choice"), [("1", "new_session"), ("2", "compact"), ("3", "continue"), ("enter", "continue"),
                                            ("escape", "continue")])
async def test_breakpoint_modal_keys(key: str, choice: str) -> None:
    app = ScreenHost(lambda: BreakpointModal(93.0))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "93% full" in screen_text(app)
        if key != "escape":
            await pilot.press(key)  # typed ahead: no answer yet
            await pilot.pause()
            assert app.results == []
        await _armed(pilot)
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
        await pilot.press("1")  # a 1 typed ahead does not overwrite anything
        await pilot.pause()
        assert app.results == []
        await _armed(pilot)
        await pilot.press(*"yes")  # a word answers nothing
        await pilot.pause()
        assert app.results == []
        await _armed(pilot)
        await pilot.press("1")
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


@pytest.mark.parametrize("size", [(100, 30), (80, 24)])
@pytest.mark.parametrize("lines", [3, 7, 18, 300])
async def test_a_long_preview_never_pushes_the_reason_and_the_buttons_out_of_sight(size: tuple[int, int], lines: int) -> None:
    preview = "\n".join(f"line {i}" for i in range(lines))
    req = PermissionRequest("c4", "write_file", "edit", {"path": "a.py", "content": preview}, preview,
                            note="AGENTS.md is an instruction file: it becomes part of the agent's instructions.")
    app = ScreenHost(lambda: PermissionModal(req))
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await pilot.pause()
        text = screen_text(app)
        assert "[3] Deny" in text and "Enter denies" in text and "line 0" in text and "Enter/Esc: deny" in text
        scrolls = app.screen.query_one("#perm-preview").max_scroll_y > 0
        assert scrolls == (f"line {lines - 1}" not in text)  # what is out of view is out of view…
        assert ("scroll with ↑ ↓" in text) == scrolls  # …and the box says so
