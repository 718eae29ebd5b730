"""Server-side strategies are refused where no server does them: config, factory, and providers."""

from __future__ import annotations

import pytest
from ctxagent.agent.config import Config
from ctxagent.agent.factory import check_strategy
from ctxagent.agent.providers.openai import OpenAIProvider
from ctxagent.context.errors import BadRequestError, ConfigError
from ctxagent.context.request import Message, Request
from ctxagent.context.server_edits import server_edits_for
from ctxagent.tui.lab.scripted.provider import ScriptedProvider
from ctxagent.tui.lab.scripted.server import ScriptedServer
from pydantic import ValidationError


def test_config_knows_the_product_strategies_only() -> None:
    assert Config(strategy="anthropic-clear").strategy == "anthropic-clear"
    assert Config(strategy="anthropic-compact").strategy == "anthropic-compact"
    with pytest.raises(ValidationError):
        Config(strategy="openai-compact")  # bench-only: Chat Completions has no compaction


def test_a_server_strategy_needs_an_anthropic_model() -> None:
    check_strategy("anthropic-clear", "anthropic:claude-sonnet-5-5")
    check_strategy("ctxagent", "openai:gpt-5-mini")
    for label in ("openai:gpt-5-mini", "scripted:inline"):
        with pytest.raises(ConfigError, match="needs an anthropic: model"):
            check_strategy("anthropic-compact", label)


def test_providers_without_server_edits_refuse_them_before_sending() -> None:
    req = Request("sys", [Message("user", "hi")], [], server_edits=server_edits_for("anthropic-clear", 200_000))
    with ScriptedServer([{"text": "never"}]) as srv:
        provider = OpenAIProvider("gpt-5-mini", api_key="sk-test-0000000000000000", base_url=srv.base_url + "/v1")
        with pytest.raises(BadRequestError, match="no server-side context management"):
            list(provider.stream(req))
        assert srv.requests == []
    with pytest.raises(BadRequestError, match="no server-side context management"):
        list(ScriptedProvider([{"text": "never"}]).stream(req))
