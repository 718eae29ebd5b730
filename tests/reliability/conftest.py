"""Fixtures for attacks through the real CLI: a cloned-looking repository and loopback model servers."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ctxagent.tui.lab.scripted.server import ScriptedServer

# --import-mode=importlib does not put test folders on sys.path; attack_helpers.py needs it.
sys.path.insert(0, str(Path(__file__).parent))

from attack_helpers import git  # noqa: E402


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A cloned-looking repository: one committed file."""
    r = tmp_path / "repo"
    r.mkdir()
    (r / "app.py").write_text("print('hi')\n")
    git(r, "init", "-q", "-b", "main")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "init")
    return r


@pytest.fixture
def servers() -> Iterator[Callable[[list[dict[str, Any]]], ScriptedServer]]:
    """Start loopback scripted model servers; each records every request it receives."""
    started: list[ScriptedServer] = []

    def start(script: list[dict[str, Any]]) -> ScriptedServer:
        srv = ScriptedServer(script)
        srv.start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()
