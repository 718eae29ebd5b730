"""An Agent on the real loop, talking through a real SDK (anthropic or openai) to the loopback scripted
server, which records every body it received: what the model was shown, request by request."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ctxagent.agent.config import Config
from ctxagent.agent.loop import Agent, AgentParts
from ctxagent.agent.providers.anthropic import AnthropicProvider
from ctxagent.agent.providers.openai import OpenAIProvider
from ctxagent.agent.session import open_session
from ctxagent.agent.updates import AgentEvent
from ctxagent.context.budget import Budget
from ctxagent.context.calibrator import Calibrator
from ctxagent.context.spill import SpillStore
from ctxagent.context.tokens import CachedCounter, get_counter
from ctxagent.tools import make_registry
from ctxagent.tools.contract import FunctionTool
from ctxagent.tui.lab.scripted.server import ScriptedServer

MODELS = {"anthropic": "claude-haiku-4-5", "openai": "gpt-5.4-mini"}

SdkAgent = Callable[..., tuple[Agent, list[AgentEvent], ScriptedServer]]


def _provider(sdk: str, url: str) -> AnthropicProvider | OpenAIProvider:
    if sdk == "anthropic":
        return AnthropicProvider(MODELS[sdk], api_key="sk-ant-test-0000000000000000", base_url=url)
    return OpenAIProvider(MODELS[sdk], api_key="sk-test-openai-000000000000000000", base_url=url + "/v1")


@pytest.fixture(params=["anthropic", "openai"])
def sdk(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def sdk_agent(work_repo: Path, sdk: str) -> Iterator[SdkAgent]:
    made: list[tuple[Agent, ScriptedServer]] = []

    def make(script: list[dict[str, Any]], *, window: int = 64_000, extra_tools: list[FunctionTool] | None = None,
             **config: Any) -> tuple[Agent, list[AgentEvent], ScriptedServer]:
        srv = ScriptedServer(script)
        srv.start()
        label = f"{sdk}:{MODELS[sdk]}"
        cfg = Config(model=label, permission_mode="yolo", memory=False, **config)
        session = open_session(work_repo, cfg)
        parts = AgentParts(
            provider=_provider(sdk, srv.base_url),
            registry=make_registry(extra=extra_tools or []),
            counter=CachedCounter(get_counter("o200k_base")),
            budget=Budget(window, max_output=1024),
            calibrator=Calibrator(label),
            spill=SpillStore(work_repo / ".ctxagent" / "spill"),
            system="You are a test agent.",
            model_label=label,
        )
        events: list[AgentEvent] = []
        agent = Agent(session, parts, on_event=events.append)
        made.append((agent, srv))
        return agent, events, srv

    yield make
    for agent, srv in made:
        agent.session.log.close()
        srv.stop()
