"""An Agent wired by hand around the in-process scripted model, in a real temporary git repo."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctxagent.agent.config import Config
from ctxagent.agent.events import AgentEvent
from ctxagent.agent.loop import Agent, AgentParts, Approver
from ctxagent.agent.providers.scripted import ScriptedProvider
from ctxagent.agent.session import open_session
from ctxagent.context.budget import Budget
from ctxagent.context.calibrator import Calibrator
from ctxagent.context.spill import SpillStore
from ctxagent.context.tokens import CachedCounter, get_counter
from ctxagent.tools import make_registry
from ctxagent.tools.base import FunctionTool, ToolResult


@pytest.fixture
def work_repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    (r / "notes.txt").write_text("alpha\nbeta\n")
    subprocess.run(["git", "init", "-q"], cwd=r, check=True)
    return r


AgentFactory = Callable[..., tuple[Agent, list[AgentEvent], ScriptedProvider]]


@pytest.fixture
def make_agent(work_repo: Path) -> AgentFactory:
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
        return Agent(session, parts, on_event=events.append, approver=approver), events, provider

    return make


def echo_tool(name: str = "echo", permission: str = "read") -> FunctionTool:
    return FunctionTool(
        name, "echo the text", {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": False},
        permission,  # type: ignore[arg-type]
        lambda args, ctx: ToolResult(f"echo: {args['text']}"),
    )


@pytest.fixture
def echo() -> Callable[..., FunctionTool]:
    return echo_tool
