"""/diff, /commit and /init in the app, on a real repository with real git: the diff screen shows the
session's changes; the commit box shows the drafted message, commits on Ctrl+S and nothing on Esc; the
/init draft opens in a box and is written only on confirmation — an existing file only by "Overwrite"."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from ctxagent.agent.factory import create_agent
from ctxagent.tui.app.app import CtxApp
from ctxagent.tui.app.screens.git_screens import CommitModal, DiffScreen
from ctxagent.tui.app.screens.init_box import InitModal
from textual.widgets import TextArea
from tui_helpers import answer, make_session, ready, screen_text, send, wait_until

pytestmark = pytest.mark.anyio

EDIT = {"name": "edit_file", "arguments": {"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}}
IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}


@pytest.fixture(autouse=True)
def _identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)


def _log(repo: Path) -> list[str]:
    return subprocess.run(["git", "log", "--format=%s"], cwd=repo, capture_output=True, text=True, check=True).stdout.split("\n")


async def test_diff_shows_the_sessions_changes(tmp_path: Path) -> None:
    session = make_session(tmp_path, [{"tool_calls": [EDIT]}, {"text": "Fixed."}])
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 36)) as pilot:
        await ready(pilot, app)
        await send(pilot, app, "/diff")
        assert "/diff: the agent has not changed any file in this session" in screen_text(app)
        await send(pilot, app, "fix add 修复")
        await send(pilot, app, "/diff")
        await wait_until(pilot, lambda: isinstance(app.screen, DiffScreen))
        text = screen_text(app)
        assert "1 file changed, +1 -1" in text and "M calc.py +1 -1" in text
        assert "-    return a - b" in text and "+    return a + b" in text
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, DiffScreen))


async def test_commit_confirm_and_cancel(tmp_path: Path) -> None:
    session = make_session(tmp_path, [{"tool_calls": [EDIT]}, {"text": "Fixed."}])
    repo = session.root
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 40)) as pilot:
        await ready(pilot, app)
        await send(pilot, app, "fix add")
        await send(pilot, app, "/commit")
        await wait_until(pilot, lambda: isinstance(app.screen, CommitModal))
        assert "--no-verify" in screen_text(app) and "a template" in screen_text(app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, CommitModal))
        assert "/commit cancelled: nothing committed" in screen_text(app) and _log(repo)[0] == "init"

        await send(pilot, app, "/commit")
        await wait_until(pilot, lambda: isinstance(app.screen, CommitModal))
        area = app.screen.query_one(TextArea)
        assert area.text.startswith("Update calc.py\n\nRequested:\n- fix add")
        area.text = "Fix add: use + 修复加法\n"
        await answer(pilot, "ctrl+s")  # once the box takes answers (tui/app/screens/question.py)
        screen = app.session_screen
        await wait_until(pilot, lambda: not isinstance(app.screen, CommitModal) and not screen.busy)
        await wait_until(pilot, lambda: "committed " in screen_text(app))
        assert _log(repo)[0] == "Fix add: use + 修复加法"
        assert subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout == ""


async def test_init_drafts_and_writes_only_on_confirm(tmp_path: Path) -> None:
    drafted = "```markdown\n# AGENTS.md\n\nRun the tests with `pytest -q`. 保持简洁。\n```"
    session = make_session(tmp_path, [{"tool_calls": [{"name": "list_files", "arguments": {}}]}, {"text": drafted},
                                      {"text": "# AGENTS.md\n\nSecond draft.\n"}])
    target = session.root / "AGENTS.md"
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 40)) as pilot:
        await ready(pilot, app)
        await send(pilot, app, "/init")
        await wait_until(pilot, lambda: isinstance(app.screen, InitModal))
        assert "drafted by the model" in screen_text(app) and not target.exists()
        assert app.screen.query_one(TextArea).text == "# AGENTS.md\n\nRun the tests with `pytest -q`. 保持简洁。\n"
        first = session.log.of_kind("user")[0].user.text
        assert "Do not write or edit any file" in first and "calc.py" in first  # the survey went with it
        await answer(pilot, "ctrl+s")
        await wait_until(pilot, lambda: target.exists())
        assert target.read_text() == "# AGENTS.md\n\nRun the tests with `pytest -q`. 保持简洁。\n"

        await send(pilot, app, "/init")  # an existing file: the box says so, Esc keeps it
        await wait_until(pilot, lambda: isinstance(app.screen, InitModal))
        assert "AGENTS.md exists (3 lines): writing replaces it" in screen_text(app)
        assert "Overwrite AGENTS.md" in screen_text(app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, InitModal))
        assert "保持简洁" in target.read_text() and "/init cancelled: AGENTS.md not written" in screen_text(app)
