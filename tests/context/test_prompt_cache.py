"""The prompt cache's rules in one place (context/prompt_cache.py): the provider's TTL decides where the
cache went cold (the builder's cold-start relief, context_status), and the 1-hour option's price."""

from __future__ import annotations

import pytest
from ctxagent.agent.providers.anthropic import AnthropicProvider
from ctxagent.agent.providers.registry import cost_usd, model_info, write_factor
from ctxagent.context.builder.cache import ColdTrail
from ctxagent.context.history import Event
from ctxagent.context.prompt_cache import RULES, SHORTEST_TTL_S, rules_for
from ctxagent.context.request import Message, Request, Usage
from ctxagent.tui.lab.bench.cache_cost import RULES as BENCH_RULES


def _log(gaps: list[float]) -> list[Event]:
    """User / assistant messages, each `gap` seconds after the one before."""
    events, ts = [Event(0, "user", {"text": "hi"}, ts=1000.0)], 1000.0
    for i, gap in enumerate(gaps, start=1):
        ts += gap
        events.append(Event(i, "user" if i % 2 == 0 else "assistant", {"text": f"m{i}"}, ts=ts))
    return events


def test_one_rule_for_the_product_and_the_bench() -> None:
    assert BENCH_RULES is RULES  # the bench's simulation prices with the rules the product reads
    assert rules_for("anthropic:claude-sonnet-5-5").ttl_s == 300.0
    assert rules_for("anthropic:claude-sonnet-5-5", "1h").ttl_s == 3600.0
    assert rules_for("anthropic:claude-sonnet-5-5", "1h").write == 2.0
    assert rules_for("openai:gpt-6.1-sol").ttl_s == 600.0
    assert rules_for("openai:gpt-6.1-sol", "1h") == RULES["openai"]  # OpenAI has its own rule, no such option
    assert rules_for("scripted:x.json").ttl_s == SHORTEST_TTL_S == 300.0  # unknown: the shortest life


def test_a_gap_is_cold_only_past_the_providers_ttl() -> None:
    trail = ColdTrail().feed(_log([30, 400, 20, 900, 10, 4000]))
    assert trail.with_build("anthropic:claude-sonnet-5-5", rules_for("anthropic:claude-sonnet-5-5").ttl_s) == {2, 4, 6}
    assert trail.with_build("openai:gpt-6.1-sol", rules_for("openai:gpt-6.1-sol").ttl_s) == {4, 6}
    assert trail.with_build("anthropic:claude-sonnet-5-5", rules_for("anthropic:claude-sonnet-5-5", "1h").ttl_s) == {6}
    # folded in two parts, the same
    events = _log([30, 400, 20, 900, 10, 4000])
    assert ColdTrail().feed(events[:3]).feed(events[3:]) == trail


def test_the_one_hour_ttl_is_sent_and_priced() -> None:
    provider = AnthropicProvider("claude-sonnet-5-5", api_key="k", base_url="http://127.0.0.1:9")
    req = Request("system", [Message("user", "hello")], [], cache_ttl="1h")
    body = provider.body(req)
    assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert "cache_ttl" in req.to_dict() and "cache_ttl" not in Request("s", [], []).to_dict()  # old bodies unchanged
    assert provider.body(Request("system", [Message("user", "hello")], []))["system"][0]["cache_control"] == {"type": "ephemeral"}
    info = model_info("anthropic", "claude-sonnet-5-5")
    writes = Usage(input_tokens=0, output_tokens=0, cache_read=0, cache_write=1_000_000)
    assert cost_usd(info, writes) == pytest.approx(2.5)  # 1.25 × the $2 input
    assert cost_usd(info, writes, "1h") == pytest.approx(4.0)  # 2 ×
    assert write_factor("openai", "1h") == 1.0
