"""The start as a user meets it (issue 24, "agent ready, not input drawn"): the provider SDK is
imported on its own worker from the first frame on, the status line says what the start waits for
("starting · loading the Anthropic SDK", then "loading the Anthropic SDK" once the agent is built),
never "idle" before it is ready, and a message typed meanwhile is sent when it is."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import ctxagent.agent
import pytest
from ctxagent.agent.factory import create_agent
from ctxagent.tui.app.app import CtxApp
from ctxagent.tui.app.widgets.chat import UserMessage
from tui_helpers import make_session, wait_until

pytestmark = pytest.mark.anyio

ANSWER = [{"text": "Answered."}] * 3


def _gated(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event, list[str]]:
    """The SDK's import and the agent's build, each held until the test releases it."""
    sdk, build = threading.Event(), threading.Event()
    calls: list[str] = []

    def warm_sdk(config: Any, before: Any = None) -> str:
        calls.append(str(config.model))
        if before is not None:
            before("Anthropic")
        sdk.wait(60)
        return "Anthropic"

    monkeypatch.setattr(ctxagent.agent, "warm_sdk", warm_sdk)
    return sdk, build, calls


async def test_the_status_says_what_the_start_waits_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sdk, build, calls = _gated(monkeypatch)
    session = make_session(tmp_path, ANSWER)

    def slow_build(sess: Any, **kw: Any) -> Any:
        build.wait(60)
        return create_agent(sess, **kw)

    app = CtxApp(session, slow_build)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.session_screen
        status = screen.status
        await wait_until(pilot, lambda: status.info.activity == "starting · loading the Anthropic SDK")
        assert calls == [session.config.model]  # the import began at the first frame, before the agent
        build.set()
        await wait_until(pilot, lambda: screen.agent is not None)
        assert status.info.activity == "loading the Anthropic SDK"  # built, but not yet ready: never "idle"
        sdk.set()
        await wait_until(pilot, lambda: status.info.activity == "idle")


async def test_a_message_typed_while_the_sdk_loads_is_sent_when_ready(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sdk, build, _ = _gated(monkeypatch)
    session = make_session(tmp_path, ANSWER)

    def slow_build(sess: Any, **kw: Any) -> Any:
        build.wait(60)
        return create_agent(sess, **kw)

    app = CtxApp(session, slow_build)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.session_screen
        await wait_until(pilot, lambda: screen.status.info.activity.startswith("starting · loading"))
        await pilot.press(*"早 early bird", "enter")
        assert [m.text for m in screen.query(UserMessage)] == ["早 early bird"] and not session.log.of_kind("user")
        sdk.set()
        await wait_until(pilot, lambda: screen.status.info.activity == "starting")  # the SDK is in; the agent is not
        build.set()
        await wait_until(pilot, lambda: bool(session.log.of_kind("assistant")) and not screen.busy)
        assert [e.data["text"] for e in session.log.of_kind("user")] == ["早 early bird"]
        assert screen.status.info.activity == "idle"


async def test_a_scripted_model_has_no_sdk_to_wait_for(tmp_path: Path) -> None:
    session = make_session(tmp_path, ANSWER)
    seen: list[str] = []
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.session_screen
        await wait_until(pilot, lambda: (seen.append(screen.status.info.activity) or True) and screen.agent is not None
                         and screen.status.info.activity == "idle")
        assert not any("SDK" in a for a in seen)


async def test_a_start_that_fails_stays_said_after_the_sdk_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxagent.context import ConfigError

    sdk, _, _ = _gated(monkeypatch)
    session = make_session(tmp_path, ANSWER)

    def no_model(sess: Any, **kw: Any) -> Any:
        raise ConfigError("no model configured")

    app = CtxApp(session, no_model, probe=False)
    async with app.run_test(size=(100, 30)) as pilot:
        status = app.session_screen.status
        await wait_until(pilot, lambda: status.info.activity == "no model")
        sdk.set()
        await pilot.pause(0.2)
        await wait_until(pilot, lambda: not app.session_screen.starter.warming)
        assert status.info.activity == "no model"
