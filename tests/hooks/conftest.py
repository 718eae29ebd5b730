"""An Agent wired around the in-process scripted model with hooks from its config, and real hook
programs: small Python scripts the tests write into the repository (a sandboxed hook's /tmp is its
own, so a script under pytest's tmp dir outside the repository would not be seen)."""

from __future__ import annotations

import json
import subprocess
import textwrap
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
from ctxagent.context.errors import SandboxUnavailableError
from ctxagent.context.spill import SpillStore
from ctxagent.context.tokens import CachedCounter, get_counter
from ctxagent.tools import make_registry
from ctxagent.tools.contract import FunctionTool
from ctxagent.tools.sandbox import DEFAULT_POLICY, find_bwrap
from ctxagent.tui.lab.scripted.provider import ScriptedProvider


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    """Hooks run in the sandbox; skipped, saying why, only where bubblewrap cannot run."""
    try:
        find_bwrap(DEFAULT_POLICY)
    except SandboxUnavailableError as exc:
        pytest.skip(f"bubblewrap cannot run on this machine: {exc}")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    (r / "notes.txt").write_text("alpha\nbeta\n")
    subprocess.run(["git", "init", "-q"], cwd=r, check=True)
    return r


HookScript = Callable[[str, str], list[str]]


@pytest.fixture
def hook_script(repo: Path) -> HookScript:
    """`hook_script(name, body)` writes a Python hook whose `payload` is its stdin JSON, appended to
    `hooklog/<name>.jsonl` before `body` runs; returns the argv that runs it."""
    folder = repo / "hookbin"
    folder.mkdir(exist_ok=True)

    def write(name: str, body: str) -> list[str]:
        path = folder / f"hook_{name}.py"  # a prefix: a script named json.py would import itself
        path.write_text(textwrap.dedent("""\
            import json, os, sys
            raw = sys.stdin.read()
            payload = json.loads(raw)
            os.makedirs("hooklog", exist_ok=True)
            with open(os.path.join("hooklog", "{name}.jsonl"), "a", encoding="utf-8") as fh:
                fh.write(json.dumps(payload, ensure_ascii=False) + "\\n")
        """).replace("{name}", name) + textwrap.dedent(body), encoding="utf-8")
        return ["python3", str(path)]

    return write


def seen(repo: Path, name: str) -> list[dict[str, Any]]:
    """What the hook `name` was given on stdin, one payload per run."""
    path = repo / "hooklog" / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


HookedAgent = Callable[..., tuple[Agent, list[AgentEvent], ScriptedProvider]]


@pytest.fixture
def hooked_agent(repo: Path) -> Iterator[HookedAgent]:
    made: list[Agent] = []

    def make(script: list[dict[str, Any]], hooks: dict[str, Any], *, mode: str = "yolo", window: int = 64_000,
             approver: Approver | None = None, extra_tools: list[FunctionTool[Any]] | None = None,
             **config: Any) -> tuple[Agent, list[AgentEvent], ScriptedProvider]:
        cfg = Config(model="scripted:inline", permission_mode=mode, memory=False, hooks=hooks, **config)
        session = open_session(repo, cfg)
        provider = ScriptedProvider(script)
        parts = AgentParts(
            provider=provider, registry=make_registry(extra=extra_tools or []),
            counter=CachedCounter(get_counter("o200k_base")), budget=Budget(window, max_output=1024),
            calibrator=Calibrator("scripted:inline"), spill=SpillStore(repo / ".ctxagent" / "spill"),
            system="You are a test agent.", model_label="scripted:inline",
        )
        events: list[AgentEvent] = []
        agent = Agent(session, parts, on_event=events.append, approver=approver)
        made.append(agent)
        return agent, events, provider

    yield make
    for agent in made:
        agent.session.log.close()
