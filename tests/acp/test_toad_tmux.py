"""The real Toad client (PyPI `batrachian-toad`) drives `ctxagent acp` in tmux; the reply is read off
the screen. Toad needs Python ≥ 3.14: without it (this machine, the CI image) the test skips with that
reason, and the SDK-driven tests (test_acp_session.py …) still run."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import BIN, MODEL

NO_TOAD = "Toad requires Python ≥ 3.14, which this machine and CI image do not have"
REPLY = "Hello from the scripted model over ACP: TOAD-OK-7431"


def _toad() -> str:
    toad = shutil.which("toad")
    if toad is None:
        if shutil.which("python3.14") is None:
            pytest.skip(NO_TOAD)
        pytest.skip("toad is not installed: uv tool install -U batrachian-toad --python 3.14")
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    return toad


def _screen(socket: str, name: str) -> str:
    return subprocess.run(["tmux", "-L", socket, "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout


def _wait_for(socket: str, name: str, text: str, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    screen = ""
    while time.monotonic() < deadline:
        screen = _screen(socket, name)
        if text in screen:
            return screen
        time.sleep(0.5)
    raise AssertionError(f"{text!r} never appeared on Toad's screen; last screen:\n{screen}")


def test_toad_shows_ctxagents_reply(repo: Path, tmp_path: Path, scripted_server) -> None:
    toad = _toad()
    srv = scripted_server([{"text": REPLY}])
    agent = shlex.join([str(BIN), "--model", MODEL, "--base-url", srv.url, "acp"])
    socket, name = f"ctxagent-acp-{os.getpid()}", "toad"
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-key-0000000000000000", "TERM": "xterm-256color"}
    subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-s", name, "-x", "160", "-y", "48",
                    shlex.join([toad, "acp", agent, str(repo)])], check=True, env=env, cwd=repo)
    try:
        time.sleep(5)  # Toad starts the agent and sends initialize / session/new
        subprocess.run(["tmux", "-L", socket, "send-keys", "-t", name, "say hello", "Enter"], check=True)
        screen = _wait_for(socket, name, "TOAD-OK-7431", 90)
        assert "scripted model over ACP" in screen
        assert len(srv.requests()) == 1
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
