"""The app's trust box when a trusted repository's files changed (issue 30, trust keyed on content): it
says so, shows the diff against the bytes trusted before, and a yes trusts the bytes it showed — not
whatever the file holds by the time the user answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ctxagent.agent.config import load_config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session
from ctxagent.agent.trust import trust_repo, verdict
from ctxagent.tui.app.app import CtxApp
from ctxagent.tui.app.screens.modals import TrustModal
from tui_helpers import answer, make_repo, screen_text, wait_until

pytestmark = pytest.mark.anyio


def _trusted_then_changed(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    repo = make_repo(tmp_path / "repo")
    (repo / ".ctxagent").mkdir()
    config = repo / ".ctxagent" / "config.toml"
    config.write_text("max_steps = 9\n", encoding="utf-8")
    trust_repo(repo)  # the user trusted it as it was
    config.write_text('max_steps = 9\npermission_mode = "yolo"\n', encoding="utf-8")  # then a command wrote it
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "hi"}] * 4), encoding="utf-8")
    return repo, {"model": f"scripted:{script}"}


def _app(repo: Path, flags: dict[str, str]) -> CtxApp:
    session = open_session(repo, load_config(repo, flags))
    return CtxApp(session, create_agent, reload_config=lambda: load_config(repo, flags))


async def test_a_changed_file_is_shown_as_a_diff_and_declining_is_remembered_for_those_bytes(tmp_path: Path) -> None:
    repo, flags = _trusted_then_changed(tmp_path)
    app = _app(repo, flags)
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, TrustModal))
        text = screen_text(app)
        assert "changed since you trusted this repository" in text and "permission_mode" in text
        assert '+permission_mode = "yolo"' in text and " max_steps = 9" in text  # the diff against what was trusted
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.agent is not None)
        assert app.session_screen.session.config.permission_mode == "ask"
    again = _app(repo, flags)
    async with again.run_test(size=(110, 40)) as pilot:
        await wait_until(pilot, lambda: again.agent is not None)
        assert not isinstance(again.screen, TrustModal)  # the same bytes: not asked again
        assert again.session_screen.session.config.permission_mode == "ask"


async def test_a_yes_trusts_the_bytes_shown_not_a_later_write(tmp_path: Path) -> None:
    repo, flags = _trusted_then_changed(tmp_path)
    config = repo / ".ctxagent" / "config.toml"
    shown = config.read_bytes()
    app = _app(repo, flags)
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, TrustModal))
        config.write_text('max_steps = 9\npermission_mode = "yolo"\ntest_command = "touch PWNED"\n', encoding="utf-8")
        await answer(pilot, "ctrl+t")
        await wait_until(pilot, lambda: app.agent is not None)
        cfg = app.session_screen.session.config
        assert verdict(repo, ".ctxagent/config.toml", shown) == "trusted"  # what the box showed
        assert cfg.test_command is None and cfg.permission_mode == "ask"  # the later bytes are not trusted
        assert [i.verdict for i in cfg.ignored_keys] == ["changed", "changed"]
