"""Test-wide guards: no network but loopback, user-level state in a temporary CTXAGENT_HOME,
hypothesis deterministic (the "ctxagent" profile: the same examples on every run and machine), and
`ast.parse` with the garbage collector paused (below)."""

from __future__ import annotations

import ast
import gc
import os
import socket
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ctxagent.agent.config import Config
from ctxagent.agent.loop import Agent, AgentParts, Approver
from ctxagent.agent.session import open_session
from ctxagent.agent.updates import AgentEvent
from ctxagent.context.budget import Budget
from ctxagent.context.calibrator import Calibrator
from ctxagent.context.spill import SpillStore
from ctxagent.context.tokens import CachedCounter, get_counter
from ctxagent.tools import make_registry
from ctxagent.tools.contract import FunctionTool, ToolArgs, ToolResult
from ctxagent.tui.lab.scripted.provider import ScriptedProvider
from ctxagent.tui.lab.scripted.spec import register_scripted
from hypothesis import settings

register_scripted()  # `scripted:PATH` models in-process, as the command line registers them (tui/lab/scripted/spec.py)

# Derandomized: a property test tries the same examples everywhere, so a failure found once is found
# again (CI, a colleague, the next run) instead of flickering; no database, so nothing carries over
# between runs. No deadline: a loaded machine must not turn a slow example into a failure.
settings.register_profile("ctxagent", derandomize=True, database=None, deadline=None, print_blob=True)
settings.load_profile("ctxagent")

# CPython 3.11's AST constructor fails with "SystemError: AST constructor recursion depth mismatch" when
# anything goes wrong while it builds the tree (python/cpython#106905): here, a collection that runs an
# earlier test's leftover finalizer (an asyncio subprocess transport's __del__ raising "Event loop is
# closed") in the middle of it. The source tests (layout, faces, display edge) parse every module, so a
# collection lands there sooner or later; with the collector paused for the parse, none does.
_real_ast_parse = ast.parse


def _parse_without_collections(*args: Any, **kwargs: Any) -> Any:
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _real_ast_parse(*args, **kwargs)
    finally:
        if enabled:
            gc.enable()


ast.parse = _parse_without_collections  # type: ignore[assignment]

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_loopback(address: object) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX
        return True
    if isinstance(address, tuple) and address:
        host = str(address[0])
        return host.startswith("127.") or host in ("localhost", "::1", "0:0:0:0:0:0:0:1")
    return False


def _guarded_connect(self: socket.socket, address: object) -> None:
    if not _is_loopback(address):
        raise OSError(f"network blocked in tests: {address!r}")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: object) -> int:
    if not _is_loopback(address):
        raise OSError(f"network blocked in tests: {address!r}")
    return _real_connect_ex(self, address)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]


def _stdin_not_a_pipe() -> None:
    """`ctxagent -p` reads piped standard input to its end (tui/cli/headless.py), and the commands the
    tests start inherit the runner's: when that is a pipe left open (a CI step's), it becomes /dev/null."""
    try:
        piped = stat.S_ISFIFO(os.fstat(0).st_mode) or stat.S_ISSOCK(os.fstat(0).st_mode)
    except OSError:
        return
    if piped:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)


_stdin_not_a_pipe()

# pyproject's `--timeout 600` bounds every test; a `slow` one (whole sessions, a 1,000-turn run, kill -9
# loops) gets this instead unless it names its own: on a loaded 2-core machine they take minutes.
SLOW_TIMEOUT_S = 1800


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") is not None and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("ctxhome")
    monkeypatch.setenv("CTXAGENT_HOME", str(home))
    # memory search is BM25 alone unless a test asks for the optional embedding model (test_memory_hybrid.py)
    monkeypatch.setenv("CTXAGENT_EMBEDDINGS", "off")
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "CTXAGENT_MODEL"):
        monkeypatch.delenv(var, raising=False)
    return home


# -- an Agent wired by hand around the in-process scripted model (tests/agent, tests/reliability) --


@pytest.fixture
def work_repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    (r / "notes.txt").write_text("alpha\nbeta\n")
    subprocess.run(["git", "init", "-q"], cwd=r, check=True)
    return r


AgentFactory = Callable[..., tuple[Agent, list[AgentEvent], ScriptedProvider]]


@pytest.fixture
def make_agent(work_repo: Path) -> Iterator[AgentFactory]:
    made: list[Agent] = []

    def make(
        script: list[dict[str, Any]],
        *,
        approver: Approver | None = None,
        window: int = 64_000,
        mode: str = "yolo",
        extra_tools: list[FunctionTool] | None = None,
        max_steps: int = 50,
        summarize: Callable[[str], str] | None = None,
    ) -> tuple[Agent, list[AgentEvent], ScriptedProvider]:
        cfg = Config(model="scripted:inline", permission_mode=mode, max_steps=max_steps, memory=False)
        session = open_session(work_repo, cfg)
        provider = ScriptedProvider(script)
        parts = AgentParts(
            provider=provider,
            registry=make_registry(extra=extra_tools or []),
            counter=CachedCounter(get_counter("o200k_base")),
            budget=Budget(window, max_output=1024),
            calibrator=Calibrator("scripted:inline"),
            spill=SpillStore(work_repo / ".ctxagent" / "spill"),
            system="You are a test agent.",
            model_label="scripted:inline",
            summarize=summarize,
        )
        events: list[AgentEvent] = []
        agent = Agent(session, parts, on_event=events.append, approver=approver)
        made.append(agent)
        return agent, events, provider

    yield make
    for agent in made:
        agent.session.log.close()  # the file handle and the session lock


class EchoArgs(ToolArgs):
    text: str


def echo_tool(name: str = "echo", permission: str = "read") -> FunctionTool[EchoArgs]:
    return FunctionTool(
        name, "echo the text", EchoArgs,
        permission,  # type: ignore[arg-type]
        lambda args, ctx: ToolResult(f"echo: {args.text}"),
    )


@pytest.fixture
def echo() -> Callable[..., FunctionTool]:
    return echo_tool
