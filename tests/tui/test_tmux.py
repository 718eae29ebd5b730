"""The real `ctxagent` in a real terminal (tmux) against the real `ctxagent scripted-server`:
a streamed reply, the gauge's percentage, and /context showing the slices, read with capture-pane."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tui_helpers import make_repo

BIN = Path(sys.executable).with_name("ctxagent")

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

SCRIPT = [
    {"text": "Let me look at calc.py first.", "tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
    {"text": "Hello from the scripted model: `add` subtracts instead of adding. 你好！"},
    {"text": "Thanks for the traceback."},
]
TRACEBACK = 'Traceback (most recent call last):\n  File "calc.py", line 2, in add\nZeroDivisionError: division by zero'



class Tmux:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True).stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "main")

    def wait_for(self, *needles: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if all(n in text for n in needles):
                return text
            time.sleep(0.2)
        raise AssertionError(f"never saw {needles!r} on screen:\n{text}")

    def send(self, *keys: str) -> None:
        self.run("send-keys", "-t", "main", *keys)

    def alive(self) -> bool:
        return subprocess.run(["tmux", "-L", self.socket, "has-session", "-t", "main"], capture_output=True).returncode == 0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT, ensure_ascii=False), encoding="utf-8")
    proc = subprocess.Popen([str(BIN), "scripted-server", str(script), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline().strip()
    assert first.startswith("listening on http://127.0.0.1:"), first
    yield first.split("listening on ", 1)[1]
    proc.terminate()
    proc.wait(timeout=10)


def test_real_ctxagent_in_tmux(tmp_path: Path, server: str) -> None:
    repo = make_repo(tmp_path / "repo")
    tmux = Tmux(f"ctxagent-test-{uuid.uuid4().hex[:8]}")
    env = {"CTXAGENT_HOME": os.environ["CTXAGENT_HOME"], "TERM": "xterm-256color", "LANG": "C.UTF-8",
           "PATH": os.environ.get("PATH", "")}
    command = " ".join([
        "env", *(f"{k}={v}" for k, v in env.items()),
        str(BIN), "--model", "anthropic:scripted-tmux", "--base-url", server, "--yes", "--window", "20000",
    ])
    tmux.run("new-session", "-d", "-s", "main", "-x", "100", "-y", "30", "-c", str(repo), command)
    try:
        tmux.wait_for("Ask for a change")
        tmux.send("what is wrong with add?", "Enter")
        screen = tmux.wait_for("Hello from the scripted model", "read_file", "%")
        assert "ctx [" in screen and "idle" in tmux.wait_for("idle")
        pct_line = next(line for line in screen.splitlines() if line.lstrip().startswith("ctx ["))
        assert "%" in pct_line
        tmux.send("/context", "Enter")
        screen = tmux.wait_for("Context window", "Tokens as")
        for name in ("system", "hot", "warm", "tools", "reserve", "free", "in use"):
            assert name in screen
        tmux.send("End")  # the rest of the page scrolls into view
        tmux.wait_for("What was spilled, cut, summarized or rewound")
        tmux.send("Escape")
        tmux.wait_for("Ask for a change")
        # a bracketed paste of a 3-line traceback stays whole in the box, and goes as one message
        tmux.run("set-buffer", "-b", "tb", TRACEBACK)
        tmux.run("paste-buffer", "-p", "-b", "tb", "-t", "main")
        screen = tmux.wait_for("ZeroDivisionError: division by zero", "line 2, in add")
        tmux.send("Enter")
        tmux.wait_for("Thanks for the traceback")
        log = next((repo / ".ctxagent" / "sessions").glob("*.jsonl")).read_text(encoding="utf-8")
        users = [json.loads(line)["data"]["text"] for line in log.splitlines() if '"kind": "user"' in line]
        assert users[-1] == TRACEBACK
        tmux.send("/quit", "Enter")
        deadline = time.monotonic() + 20
        while tmux.alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not tmux.alive()  # /quit left the app (and with it the tmux session)
    finally:
        subprocess.run(["tmux", "-L", tmux.socket, "kill-server"], capture_output=True)
