"""Fixtures for `ctxagent acp`: a real git repository, the real scripted model server as a subprocess,
and the SDK's own client side (`acp.spawn_agent_process`) driving the real `ctxagent acp` process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

BIN = Path(sys.executable).with_name("ctxagent")
MODEL = "anthropic:claude-sonnet-5-5"
CALC = "def add(a, b):\n    return a - b\n"


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    (r / "calc.py").write_text(CALC)
    (r / "README.md").write_text("# calc\n")
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
        proc = subprocess.Popen([str(BIN), "scripted-server", str(path), "--port", "0", "--record", str(record)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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


@dataclass
class RecordingClient:
    """The client side: records every update, answers permission questions from `answers` (an option id,
    "cancel", or "never"), and serves `buffers` (unsaved editor buffers, by absolute path) over fs/."""

    answers: list[str] = field(default_factory=list)
    buffers: dict[str, str] = field(default_factory=dict)
    updates: list[tuple[str, Any]] = field(default_factory=list)
    permissions: list[Any] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)
    conn: Any = None
    asked: asyncio.Event | None = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        self.permissions.append((tool_call, options))
        if self.asked is not None:
            self.asked.set()
        answer = self.answers.pop(0) if self.answers else "allow_once"
        if answer == "never":
            await asyncio.Event().wait()
        if answer == "cancel":
            await self.conn.cancel(session_id=session_id)
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def read_text_file(self, path: str, session_id: str, limit: int | None = None, line: int | None = None,
                             **kwargs: Any) -> Any:
        from acp import RequestError
        from acp.schema import ReadTextFileResponse

        self.reads.append(path)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        try:
            return ReadTextFileResponse(content=Path(path).read_text())
        except OSError as exc:
            raise RequestError.invalid_params({"path": str(exc)}) from exc

    async def write_text_file(self, content: str, path: str, session_id: str, **kwargs: Any) -> Any:
        from acp.schema import WriteTextFileResponse

        self.writes.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    def of(self, kind: str) -> list[Any]:
        return [u for _, u in self.updates if getattr(u, "session_update", None) == kind]

    def text(self) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk"))


def agent_env(home: str | None = None) -> dict[str, str]:
    return {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-key-0000000000000000"}


@asynccontextmanager
async def acp_agent(client: RecordingClient, repo: Path, url: str, *extra: str,
                    stderr: Path | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """`ctxagent --model … --base-url URL acp EXTRA…` as a subprocess, with the SDK's client connection."""
    from acp import spawn_agent_process

    err = open(stderr or repo.parent / "acp-stderr.txt", "ab")
    try:
        async with spawn_agent_process(client, str(BIN), "--model", MODEL, "--base-url", url, "acp", *extra,
                                       env=agent_env(), cwd=repo, transport_kwargs={"stderr": err.fileno()}) as (conn, proc):
            yield conn, proc
    finally:
        err.close()


def session_events(repo: Path, session: str) -> list[dict[str, Any]]:
    """Every line of the session log parsed (a torn or garbled line fails the test)."""
    path = repo / ".ctxagent" / "sessions" / f"{session}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run(coro: Any, timeout: float = 90) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))
