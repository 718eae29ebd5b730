"""Slash commands: parsing, completion, help, and the input box's completion and history."""

from __future__ import annotations

import pytest
from ctxagent.tui.app.commands import COMMANDS, complete, help_text, lookup, parse_slash, unescape
from ctxagent.tui.app.widgets.prompt import ChatInput, InputHistory, file_matches
from tui_helpers import HostApp

REQUIRED = {"compact", "rewind", "new", "context", "memory", "remember", "model", "clear", "resume", "cost", "help"}


pytestmark = pytest.mark.anyio


def test_registry_has_every_command_once() -> None:
    names = [c.name for c in COMMANDS]
    assert REQUIRED <= set(names)
    assert len(names) == len(set(names))


def test_parse_with_and_without_arguments() -> None:
    p = parse_slash("/compact keep the API notes")
    assert p is not None and p.command is not None
    assert (p.command.name, p.arg) == ("compact", "keep the API notes")
    p = parse_slash("  /context  ")
    assert p is not None and p.command is not None and p.command.name == "context" and p.arg == ""
    p = parse_slash("/remember 不要修改配置文件")
    assert p is not None and p.arg == "不要修改配置文件"
    p = parse_slash("／help")  # full-width slash from a Chinese input method
    assert p is not None and p.command is not None and p.command.name == "help"
    p = parse_slash("/frobnicate now")
    assert p is not None and p.command is None and p.name == "frobnicate"
    assert parse_slash("/?").command.name == "help"  # type: ignore[union-attr]
    assert lookup("EXIT").name == "quit"  # type: ignore[union-attr]


def test_plain_text_and_escaped_slash_are_not_commands() -> None:
    assert parse_slash("fix the bug in /src/app.py") is None
    assert parse_slash("//etc/hosts looks wrong") is None
    assert unescape("//etc/hosts looks wrong") == "/etc/hosts looks wrong"
    assert parse_slash("/") is None
    assert parse_slash("") is None


def test_completion() -> None:
    assert complete("/co") == ["/compact", "/context", "/cost", "/commit"]
    assert complete("/rem") == ["/remember"]
    assert complete("/") == [f"/{c.name}" for c in COMMANDS]
    assert complete("/compact now") == []
    assert complete("hello") == []


def test_help_lists_every_command() -> None:
    text = help_text()
    for c in COMMANDS:
        assert f"/{c.name}" in text
    assert "Esc" in text


def test_history_walks_and_keeps_draft() -> None:
    h = InputHistory()
    for line in ("one", "two", "two", "三"):
        h.add(line)
    assert h.entries == ["one", "two", "三"]
    assert h.older("draft") == "三"
    assert h.older("三") == "two"
    assert h.older("two") == "one"
    assert h.older("one") is None
    assert h.newer() == "two"
    assert h.newer() == "三"
    assert h.newer() == "draft"
    assert h.newer() is None


async def test_input_tab_completes_and_arrows_recall() -> None:
    box = ChatInput()
    async with HostApp(box).run_test(size=(80, 10)) as pilot:
        box.focus()
        await pilot.press("/", "r", "e", "m", "tab")
        assert box.value == "/remember "
        box.value = "/co"
        await pilot.press("tab")
        assert box.value == "/co"  # three matches, no longer common prefix: unchanged (a toast lists them)
        box.value = "/comp"
        await pilot.press("tab")
        assert box.value == "/compact "
        box.value = ""
        box.remember("first question")
        box.remember("second question\nwith two lines")
        await pilot.press("up")
        assert box.value == "second question\nwith two lines"
        await pilot.press("up")  # the cursor is on the last line: up moves it to the first …
        await pilot.press("up")  # … and from the first line, up recalls the older input
        assert box.value == "first question"
        await pilot.press("down", "down")
        assert box.value == ""


async def test_suggestion_greys_in_the_command_and_right_accepts_it() -> None:
    box = ChatInput()
    async with HostApp(box).run_test(size=(80, 10)) as pilot:
        box.focus()
        await pilot.press("/", "c", "o", "n")
        await pilot.pause()
        assert box.suggestion == "text"
        await pilot.press("right")
        assert box.value == "/context"


async def test_at_file_completion_lists_repository_files() -> None:
    files = ["calc.py", "docs/登录.md", "src/app.py", "src/api.py", "tests/test_calc.py"]
    box = ChatInput(files=lambda: files)
    async with HostApp(box).run_test(size=(80, 10)) as pilot:
        box.focus()
        await pilot.press(*"look at @src/ap")
        await pilot.pause()
        assert box.suggestion == "p.py"  # the first match, greyed in
        await pilot.press("tab")
        assert box.value == "look at @src/ap"  # two matches, no longer common prefix
        await pilot.press("p", "tab")
        assert box.value == "look at @src/app.py"
        box.value = "and @登"
        await pilot.press("tab")
        assert box.value == "and @docs/登录.md"  # a file containing what was typed
        assert file_matches("calc", files) == ["calc.py"]  # a path starting so is the one meant
        assert file_matches("test_", files) == ["tests/test_calc.py"]


async def test_enter_sends_and_new_lines_stay_in_the_box() -> None:
    box = ChatInput()
    sent: list[str] = []

    class Host(HostApp):
        def on_chat_input_submitted(self, message: ChatInput.Submitted) -> None:
            sent.append(message.text)

    async with Host(box).run_test(size=(80, 12)) as pilot:
        box.focus()
        await pilot.press(*"first", "shift+enter", *"second", "ctrl+j", *"third\\", "enter", *"fourth")
        assert sent == [] and box.value == "first\nsecond\nthird\nfourth"
        await pilot.press("enter")
        assert sent == ["first\nsecond\nthird\nfourth"]


async def test_a_bracketed_paste_of_a_traceback_is_kept_whole() -> None:
    from textual import events

    traceback = ('Traceback (most recent call last):\n  File "calc.py", line 2, in add\n'
                 "ZeroDivisionError: division by zero")
    box = ChatInput()
    app = HostApp(box)
    async with app.run_test(size=(80, 12)) as pilot:
        box.focus()
        await pilot.press(*"why? ")
        app.post_message(events.Paste(traceback))  # as the terminal driver delivers a bracketed paste
        await pilot.pause()
        assert box.value == "why? " + traceback and box.document.line_count == 3


async def test_slash_commands_are_in_the_command_palette() -> None:
    from ctxagent.tui.app.app import CtxApp

    app = CtxApp(probe=False)  # no session: the setup screen; the palette still lists every command
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for c in COMMANDS:
            assert f"/{c.name}" in titles


def test_every_command_has_a_handler_and_every_handler_a_command() -> None:
    from ctxagent.tui.app.slash import HANDLERS

    assert set(HANDLERS) == {c.name for c in COMMANDS}
