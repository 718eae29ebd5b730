"""Fixtures for the sub-agent tests: a real git repository, the real scripted server as a subprocess,
and the real `ctxagent` console script (as in tests/e2e)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

BIN = Path(sys.executable).with_name("ctxagent")

CALC = "def add(a, b):\n    return a - b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    (r / "calc.py").write_text(CALC)
    (r / "test_calc.py").write_text(TEST_CALC)
    (r / "AGENTS.md").write_text("Always run the tests after editing. Project codename: BLUEHERON.\n")
    git(r, "init", "-q", "-b", "main")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "init")
    return r


class Server:
    def __init__(self, proc: subprocess.Popen[str], url: str, record: Path):
        self.proc, self.url, self.record = proc, url, record

    def requests(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines() if line.strip()]


@pytest.fixture
def scripted_server(tmp_path: Path) -> Iterator[Callable[[list[dict[str, Any]]], Server]]:
    started: list[Server] = []

    def start(script: list[dict[str, Any]]) -> Server:
        n = len(started)
        path = tmp_path / f"script{n}.json"
        path.write_text(json.dumps(script))
        record = tmp_path / f"record{n}.jsonl"
        proc = subprocess.Popen(
            [str(BIN), "scripted-server", str(path), "--port", "0", "--record", str(record)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("listening on http://127.0.0.1:"), first
        srv = Server(proc, first.split("listening on ", 1)[1], record)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.proc.terminate()
        srv.proc.wait(timeout=10)


def run_ctxagent(repo: Path, *args: str, env: dict[str, str] | None = None, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-key-0000000000000000", "OPENAI_API_KEY": "sk-test-openai-000000000000000000", **(env or {})}
    return subprocess.run([str(BIN), *args], cwd=repo, capture_output=True, text=True, env=full_env, timeout=timeout)


def session_events(repo: Path, session: str) -> list[dict[str, Any]]:
    path = repo / ".ctxagent" / "sessions" / f"{session}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def ctxagent_run() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_ctxagent


@pytest.fixture
def read_session() -> Callable[[Path, str], list[dict[str, Any]]]:
    return session_events
