"""Shared helpers for the TUI tests: reports, a one-widget host app."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from ctxagent.context.report import ContextReport
from textual.app import App, ComposeResult
from textual.widget import Widget


def make_report(pct: float, *, window: int = 10_000, step: int = 1, turn: int = 1, red_flags: list[str] | None = None,
                **overrides: Any) -> ContextReport:
    """A report whose slices add up to `pct` of the window (reserve 5 %)."""
    reserve = window // 20
    filled = max(0, int(window * pct / 100) - reserve)
    used = {"system": filled * 2 // 10, "hot": filled * 5 // 10, "warm": filled // 10, "tools": 0}
    used["tools"] = filled - used["system"] - used["hot"] - used["warm"]
    used["reserve"] = reserve
    budget = {"system": window * 15 // 100, "hot": window * 40 // 100, "warm": window // 4,
              "tools": window * 15 // 100, "reserve": reserve}
    advice = "new_session" if pct >= 90 else "compress" if pct >= 75 else "ok"
    fields: dict[str, Any] = dict(
        step=step, turn=turn, window=window, budget=budget, used=used, total=filled, usage_pct=pct,
        calibrated_total=filled, calibration_ratio=1.0, system_in_window=True, oldest_visible_turn=1,
        messages=3, red_flags=list(red_flags or []), advice=advice,
    )
    fields.update(overrides)
    return ContextReport(**fields)


class HostApp(App[None]):
    """Mounts the widgets given to it; tests drive them through `app.run_test()`."""

    def __init__(self, *widgets: Widget) -> None:
        super().__init__()
        self._widgets = widgets

    def compose(self) -> ComposeResult:
        yield from self._widgets


class ScreenHost(App[None]):
    """Pushes one screen at mount and records what it dismissed with in `results`."""

    def __init__(self, make_screen: Any) -> None:
        super().__init__()
        self.make_screen = make_screen
        self.results: list[Any] = []

    def on_mount(self) -> None:
        self.push_screen(self.make_screen(), self.results.append)


_SVG_TEXT = re.compile(r'<text class="[^"]*" x="([0-9.]+)" y="[0-9.]+" textLength="[0-9.]+" '
                       r'clip-path="url\(#terminal-[-0-9]+-line-([0-9]+)\)">([^<]*)</text>')
CELL_PX = 12.2  # the width of one terminal cell in Textual's SVG screenshots


def screen_text(app: App[Any]) -> str:
    """What the terminal shows right now, as plain text lines (like tmux capture-pane), read from
    the public SVG screenshot: each run of text placed at its column."""
    from rich.cells import cell_len

    lines: dict[int, str] = {}
    for x, line, text in _SVG_TEXT.findall(app.export_screenshot()):
        text = html.unescape(text).replace("\xa0", " ").replace("\n", "")
        col, row = round(float(x) / CELL_PX), int(line)
        current = lines.get(row, "")
        pad = col - cell_len(current)
        lines[row] = current + " " * max(0, pad) + text
    return "\n".join(lines.get(i, "") for i in range(max(lines, default=-1) + 1))


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout


def make_repo(root: Path) -> Path:
    """A small real git repository with a bug and a failing test."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    (root / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
                                       encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


def make_session(tmp_path: Path, script: list[dict[str, Any]], **config: Any) -> Any:
    """A real session in a real repo, driven by the in-process scripted model."""
    from ctxagent.agent.config import load_config
    from ctxagent.agent.session import open_session

    repo = make_repo(tmp_path / "repo")
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script, ensure_ascii=False), encoding="utf-8")
    flags = {"model": f"scripted:{path}", "permission_mode": "yolo", **config}
    cfg = load_config(repo, flags)
    return open_session(repo, cfg)


class SlowProvider:
    """Network latency for a real provider: sleeps before each stream event (for Esc mid-stream)."""

    def __init__(self, inner: Any, delay: float) -> None:
        self.inner, self.delay = inner, delay
        self.name, self.model = inner.name, inner.model

    def body(self, request: Any) -> Any:
        return self.inner.body(request)

    def stream(self, request: Any, cancel: Any = None) -> Any:
        for ev in self.inner.stream(request, cancel):
            time.sleep(self.delay)
            yield ev


async def wait_until(pilot: Any, predicate: Any, timeout: float = 30.0) -> None:
    """Let the app run until `predicate()` holds (bounded; fails the test on timeout), then let it
    render once more (a screen just pushed has not drawn yet)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.02)
    await pilot.pause()


async def answer(pilot: Any, *keys: str, timeout: float = 30.0) -> None:
    """Press `keys` at the question on screen once it takes answers (tui/app/screens/modals.py `GuardedModal`:
    keys typed within its first moment are ignored)."""
    await wait_until(pilot, lambda: getattr(pilot.app.screen, "armed", True), timeout)
    await pilot.press(*keys)


async def ready(pilot: Any, app: Any, timeout: float = 60.0) -> Any:
    """Wait until the app's agent is ready — built, and its provider SDK imported (both after the first
    frame, on workers: tui/app/agent_start.py); the session screen."""
    await wait_until(pilot, lambda: app.agent is not None and app.session_screen.starter.warmed
                     and not app.session_screen.busy, timeout)
    await pilot.pause()
    return app.session_screen


async def send(pilot: Any, app: Any, text: str, timeout: float = 60.0) -> None:
    """Type `text` into the input (as a paste: newlines kept), press Enter, wait for the turn or action."""
    screen = app.session_screen
    screen.input.value = text
    await pilot.press("enter")
    await wait_until(pilot, lambda: not screen.busy, timeout)
    await pilot.pause()


async def type_text(pilot: Any, text: str) -> None:
    """Type `text` as a terminal delivers it: each character one key event carrying that character (the
    way Textual's own input parser makes them, and the way an input method's committed text arrives),
    all of them queued at once, as a fast typist's or an input method's burst is — no key waits for the
    app to have handled the one before. (`Pilot.press` also loses characters such as the full-width
    comma "，": its key name does not round-trip.)"""
    from textual import events
    from textual.keys import _character_to_key

    app = pilot.app
    for character in text:
        event = events.Key(character if character.isalnum() else _character_to_key(character), character)
        event.set_sender(app)
        app._driver.send_message(event)
    await pilot.pause()
    await pilot.pause()
