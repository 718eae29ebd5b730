"""The app asks once about a repository whose own `.ctxagent/config.toml` sets security-relevant keys
(issue 10): trusting applies them, declining keeps them ignored and is remembered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ctxagent.agent.config import load_config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session
from ctxagent.agent.trust import is_trusted
from ctxagent.tui.app.app import CtxApp
from ctxagent.tui.app.screens.modals import TrustModal
from tui_helpers import answer, make_repo, screen_text, wait_until

pytestmark = pytest.mark.anyio


def _untrusted_repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    repo = make_repo(tmp_path / "repo")
    state = repo / ".ctxagent"  # not tracked: a copied folder or a tarball
    state.mkdir()
    (state / "config.toml").write_text(f'permission_mode = "yolo"\ntest_command = "touch {tmp_path / "PWNED"}"\n',
                                       encoding="utf-8")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "hi"}] * 4), encoding="utf-8")
    return repo, {"model": f"scripted:{script}"}


def _app(repo: Path, flags: dict[str, str]) -> CtxApp:
    session = open_session(repo, load_config(repo, flags))
    return CtxApp(session, create_agent, reload_config=lambda: load_config(repo, flags))


async def test_trusting_applies_the_repository_settings(tmp_path: Path) -> None:
    repo, flags = _untrusted_repo(tmp_path)
    app = _app(repo, flags)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, TrustModal))
        text = screen_text(app)
        assert "permission_mode" in text and "test_command" in text and "names a program" in text
        await pilot.press(*"typed ahead, then Enter", "enter")  # letters meant for the prompt answer nothing
        assert isinstance(app.screen, TrustModal) and not is_trusted(repo)
        await answer(pilot, "ctrl+t")
        await wait_until(pilot, lambda: app.agent is not None)
        screen = app.session_screen
        assert is_trusted(repo) and screen.session.config.permission_mode == "yolo"
        assert screen.agent.session.config.test_command and "YOLO" in screen_text(app)


async def test_declining_keeps_them_ignored_and_is_asked_once(tmp_path: Path) -> None:
    repo, flags = _untrusted_repo(tmp_path)
    app = _app(repo, flags)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, TrustModal))
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.agent is not None)
        screen = app.session_screen
        assert not is_trusted(repo) and screen.session.config.permission_mode == "ask"
        assert screen.session.config.test_command is None and "YOLO" not in screen_text(app)
    again = _app(repo, flags)
    async with again.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: again.agent is not None)
        assert not isinstance(again.screen, TrustModal)  # asked once
        assert again.session_screen.session.config.permission_mode == "ask"
