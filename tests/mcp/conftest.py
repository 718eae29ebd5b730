"""Real MCP servers on loopback: the fixture server over stdio and over Streamable HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ctxagent.agent.mcp.client import McpHub
from ctxagent.agent.mcp.config import McpServerConfig
from ctxagent.tools.sandbox import SandboxPolicy

SERVER = str(Path(__file__).with_name("fixture_server.py"))


def stdio_server(mode: str = "stdio", *, tools: int = 0, evolve: bool = False, **kw: Any) -> McpServerConfig:
    args = [SERVER, mode, *(["--tools", str(tools)] if tools else []), *(["--evolve"] if evolve else [])]
    return McpServerConfig(command=sys.executable, args=args, **kw)


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Start the fixture server over Streamable HTTP on 127.0.0.1 (`mode` "chunked": the hand-written
    endless one); returns its URL."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(tools: int = 0, mode: str = "http", evolve: bool = False) -> str:
        port_file = tmp_path / f"port{len(procs)}"
        proc = subprocess.Popen([sys.executable, SERVER, mode, str(port_file), "--tools", str(tools),
                                 *(["--evolve"] if evolve else [])],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(proc)
        deadline = time.monotonic() + 30
        while not port_file.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the HTTP fixture server did not start"
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port_file.read_text()}/mcp"
        import socket

        while time.monotonic() < deadline:  # until uvicorn listens
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", int(port_file.read_text()))) == 0:
                    return url
            time.sleep(0.05)
        raise AssertionError("the HTTP fixture server never listened")

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def hub_of(tmp_path: Path) -> Iterator[Callable[..., McpHub]]:
    hubs: list[McpHub] = []

    def make(servers: dict[str, McpServerConfig], policy: SandboxPolicy | None = None, **kw: Any) -> McpHub:
        hub = McpHub(servers, tmp_path, policy or SandboxPolicy(), **kw).start()
        hubs.append(hub)
        return hub

    yield make
    for hub in hubs:
        hub.close()


def env_without(*names: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in names}


# -- end to end: a real repository, the scripted model server, the real console script ------------

BIN = Path(sys.executable).with_name("ctxagent")


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    (r / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(r, "init", "-q", "-b", "main")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "init")
    return r


class Scripted:
    def __init__(self, proc: subprocess.Popen[str], url: str, record: Path):
        self.proc, self.url, self.record = proc, url, record

    def bodies(self) -> list[dict[str, Any]]:
        import json

        lines = self.record.read_text().splitlines() if self.record.exists() else []
        return [json.loads(line)["body"] for line in lines if line.strip()]


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[Callable[[list[dict[str, Any]]], Scripted]]:
    import json

    started: list[Scripted] = []

    def start(script: list[dict[str, Any]]) -> Scripted:
        path = tmp_path / f"script{len(started)}.json"
        path.write_text(json.dumps(script))
        record = tmp_path / f"record{len(started)}.jsonl"
        proc = subprocess.Popen([str(BIN), "scripted-server", str(path), "--port", "0", "--record", str(record)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("listening on http://127.0.0.1:"), first
        srv = Scripted(proc, first.split("listening on ", 1)[1], record)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.proc.terminate()
        srv.proc.wait(timeout=10)


def user_config(text: str) -> Path:
    path = Path(os.environ["CTXAGENT_HOME"]) / "config" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def run_ctxagent(repo: Path, *args: str, env: dict[str, str] | None = None,
                 timeout: int = 180) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-key-0000000000000000", **(env or {})}
    return subprocess.run([str(BIN), *args], cwd=repo, capture_output=True, text=True, env=full, timeout=timeout)


def session_events(repo: Path) -> list[dict[str, Any]]:
    import json

    (path,) = (repo / ".ctxagent" / "sessions").glob("*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
