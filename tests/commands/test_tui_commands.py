"""Custom commands in the app (Pilot): registered in the one registry, listed in /help, completed in
the prompt, and a project command's expansion shown and confirmed before its first run in a session."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ctxagent.agent.factory import create_agent
from ctxagent.context.floor.state_paths import user_config_dir
from ctxagent.tui.app.app import CtxApp
from ctxagent.tui.app.commands import complete, help_text, lookup, set_custom
from ctxagent.tui.app.screens.pickers import ConfirmModal, InfoModal

sys.path.insert(0, str(Path(__file__).parent.parent / "tui"))
from tui_helpers import answer, make_session, ready, send, wait_until  # noqa: E402

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_custom_left() -> Iterator[None]:
    yield
    set_custom([])  # the registry is the process's: the next test starts with the built-ins only


def _templates(root: Path) -> None:
    folder = root / ".ctxagent" / "commands"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "review.md").write_text("---\ndescription: Review a file\nargument-hint: FILE\n---\n"
                                      "Review @$1 carefully.\n", encoding="utf-8")
    (folder / "compact.md").write_text("project compact: $ARGUMENTS", encoding="utf-8")
    user = user_config_dir() / "commands"
    user.mkdir(parents=True, exist_ok=True)
    (user / "explain.md").write_text("---\ndescription: Explain simply\n---\n请简单解释 $ARGUMENTS", encoding="utf-8")


async def test_registration_help_completion_and_confirmation(tmp_path: Path) -> None:
    session = make_session(tmp_path, [{"text": "reviewed"}, {"text": "again"}, {"text": "explained"},
                                      {"text": "the project one"}])
    _templates(session.root)
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await ready(pilot, app)
        # registered after the first frame: completion, lookup, and the built-in keeps its name
        assert complete("/rev") == ["/review"] and complete("/exp") == ["/explain"]
        assert lookup("compact").custom is None  # type: ignore[union-attr]
        assert lookup("project:compact").custom is not None  # type: ignore[union-attr]
        assert "/project:compact" in complete("/pro")
        await send(pilot, app, "/help")
        modal = app.screen
        assert isinstance(modal, InfoModal)
        assert "/review FILE" in modal.markdown and "Review a file (project: review.md)" in modal.markdown
        assert "Explain simply (yours: explain.md)" in modal.markdown and "/project:NAME" in modal.markdown
        await pilot.press("escape")

        # a project command: its expansion is shown first; "no" sends nothing
        screen.input.value = "/review calc.py"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert app.screen.detail == "Review @calc.py carefully."  # type: ignore[attr-defined]
        await answer(pilot, "2")
        await pilot.pause()
        assert session.log.of_kind("user") == []
        # "yes": sent, with the mention attached
        screen.input.value = "/review calc.py"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await answer(pilot, "1")
        await wait_until(pilot, lambda: not screen.busy and len(session.log.of_kind("user")) == 1)
        assert session.log.of_kind("user")[0].user.text == "Review @calc.py carefully."
        assert [e.tool_result.name for e in session.log.of_kind("tool_result")] == ["read_file"]
        # the second run in this session is not asked again; a user command is never asked
        await send(pilot, app, "/review calc.py")
        assert not isinstance(app.screen, ConfirmModal) and len(session.log.of_kind("user")) == 2
        await send(pilot, app, "/explain 闭包")
        assert session.log.of_kind("user")[-1].user.text == "请简单解释 闭包"
        # the clashing project command by its qualified name
        screen.input.value = "/project:compact now"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await answer(pilot, "1")
        await wait_until(pilot, lambda: not screen.busy and len(session.log.of_kind("user")) == 4)
        assert session.log.of_kind("user")[-1].user.text == "project compact: now"


async def test_a_template_written_mid_session_is_found(tmp_path: Path) -> None:
    session = make_session(tmp_path, [{"text": "ok"}, {"text": "gem ok"}])
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await ready(pilot, app)
        assert complete("/late") == []
        (user_config_dir() / "commands").mkdir(parents=True, exist_ok=True)
        (user_config_dir() / "commands" / "late.md").write_text("late one", encoding="utf-8")
        await send(pilot, app, "/late")
        assert session.log.of_kind("user")[0].user.text == "late one" and not screen.busy
        # Gemini CLI's shape, beside the .md ones: completed, listed, expanded
        (user_config_dir() / "commands" / "gem.toml").write_text(
            'description = "Gemini shape"\nprompt = "gem: {{args}}"\n', encoding="utf-8")
        await send(pilot, app, "/gem 你好")
        assert session.log.of_kind("user")[-1].user.text == "gem: 你好" and not screen.busy
        assert complete("/ge") == ["/gem"] and "Gemini shape (yours: gem.toml)" in help_text()


def test_help_cells_from_a_file_cannot_break_the_table(tmp_path: Path) -> None:
    from ctxagent.agent import CustomCommand

    set_custom([CustomCommand("x", "project", tmp_path / "x.md", "t", description="a | b\nnext line",
                              argument_hint="`FILE`")])
    row = next(line for line in help_text().splitlines() if "/x" in line)
    assert len(re.findall(r"(?<!\\)\|", row)) == 3  # two columns: the pipe from the file is escaped
    assert "a \\| b next line" in row and "`/x 'FILE'`" in row
