"""Schemas on a budget: which MCP tools are offered at once, which wait behind search_tools, and what
the search finds (BM25 over names and descriptions, English and Chinese)."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
from ctxagent.agent.mcp.catalog import SEARCH_TOOL, McpCatalog
from ctxagent.agent.mcp.client import McpHub, ServerState
from ctxagent.agent.mcp.config import McpServerConfig
from ctxagent.context.tokens import CachedCounter, get_counter
from ctxagent.tools.contract import ToolContext
from ctxagent.tools.sandbox import SandboxPolicy

COUNTER = CachedCounter(get_counter("o200k_base"))


def _tools(n: int, prefix: str = "t") -> list[types.Tool]:
    topics = [("weather", "Get the weather forecast for a city. 天气预报"), ("refund", "Refund a card payment. 退款"),
              ("deploy", "Deploy a service to staging. 部署服务")]
    return [types.Tool(name=f"{topics[i % 3][0]}_{prefix}{i}", description=topics[i % 3][1] + f" Variant {i}.",
                       input_schema={"type": "object", "properties": {"q": {"type": "string"}}}) for i in range(n)]


def _catalog(window: int, *names: str) -> McpCatalog:
    servers = {n: McpServerConfig(command="x") for n in names}
    return McpCatalog(McpHub(servers, Path("."), SandboxPolicy()), servers, counter=COUNTER, window=window, share=0.10)


def test_small_servers_are_offered_at_once() -> None:
    cat = _catalog(200_000, "a")
    cat.on_change(ServerState("a", "stdio", "ready", tools=_tools(3)))
    assert [t.name for t in cat.drain()] == ["mcp__a__weather_t0", "mcp__a__refund_t1", "mcp__a__deploy_t2"]
    assert cat.deferred_servers == [] and cat.tokens["a"] > 0


def test_past_the_share_a_server_waits_behind_search_tools() -> None:
    cat = _catalog(20_000, "small", "big")
    cat.on_change(ServerState("small", "stdio", "ready", tools=_tools(2, "s")))
    cat.on_change(ServerState("big", "stdio", "ready", tools=_tools(200, "b")))
    offered = [t.name for t in cat.drain()]
    assert offered == ["mcp__small__weather_s0", "mcp__small__refund_s1", SEARCH_TOOL]
    assert cat.deferred_servers == ["big"] and cat.tokens["big"] > 2_000


def test_search_finds_by_words_in_both_languages_and_loads_for_good() -> None:
    cat = _catalog(10_000, "big")
    cat.on_change(ServerState("big", "stdio", "ready", tools=_tools(30)))
    cat.drain()
    assert all(t.name.startswith("mcp__big__refund_") for t in cat.search("退款", 3))
    assert all(t.name.startswith("mcp__big__weather_") for t in cat.search("forecast for Paris", 3))
    result = cat.search_tool.run({"query": "部署", "limit": 2}, ToolContext(root=Path(".")))
    assert not result.is_error and "Loaded 2 tool(s)" in result.content
    loaded = [t.name for t in cat.drain()]
    assert len(loaded) == 2 and all("deploy" in n for n in loaded)
    assert not set(loaded) & {t.name for t in cat.search("部署", 30)}  # loaded ones leave the pool
    assert cat.search_tool.run({"query": "zzz-nothing"}, ToolContext(root=Path("."))).content.startswith("no tool")


def test_exact_names_load_those_tools() -> None:
    cat = _catalog(10_000, "big")
    cat.on_change(ServerState("big", "stdio", "ready", tools=_tools(30)))
    assert [t.name for t in cat.search("mcp__big__deploy_t5 mcp__big__refund_t7")] == ["mcp__big__deploy_t5",
                                                                                       "mcp__big__refund_t7"]


def test_a_new_list_appends_its_new_tools_and_keeps_the_ones_sent() -> None:
    cat = _catalog(200_000, "a")
    tools = _tools(3)
    cat.on_change(ServerState("a", "stdio", "ready", tools=tools))
    first = [t.name for t in cat.drain()]
    extra = types.Tool(name="lookup", description="Look a word up. 查词。", input_schema={"type": "object"})
    cat.on_change(ServerState("a", "stdio", "ready", tools=[tools[0], tools[2], extra]))  # tools[1] removed
    assert [t.name for t in cat.drain()] == ["mcp__a__lookup"]  # only the new one, appended
    assert first == ["mcp__a__weather_t0", "mcp__a__refund_t1", "mcp__a__deploy_t2"]
    cat.on_change(ServerState("a", "stdio", "ready", tools=[tools[0], extra]))
    assert cat.drain() == [] and cat.deferred_servers == []  # nothing new: nothing offered, nothing moves


def test_a_new_list_past_the_share_waits_behind_search_tools_and_gone_ones_leave_the_pool() -> None:
    cat = _catalog(20_000, "a", "big")
    cat.on_change(ServerState("a", "stdio", "ready", tools=_tools(2, "s")))
    cat.on_change(ServerState("big", "stdio", "ready", tools=_tools(60, "b")))
    assert [t.name for t in cat.drain()] == ["mcp__a__weather_s0", "mcp__a__refund_s1", SEARCH_TOOL]
    # the small server grows past the share: its new tools wait too
    cat.on_change(ServerState("a", "stdio", "ready", tools=_tools(2, "s") + _tools(200, "n")))
    assert cat.drain() == [] and cat.deferred_servers == ["big", "a"]
    assert [t.name for t in cat.search("mcp__a__refund_n4")] == ["mcp__a__refund_n4"]
    # the big server drops half its tools: search_tools no longer finds them
    cat.on_change(ServerState("big", "stdio", "ready", tools=_tools(30, "b")))
    assert "mcp__big__deploy_b50" not in {t.name for t in cat.search("mcp__big__deploy_b50", 20)}
    assert [t.name for t in cat.search("mcp__big__deploy_b5")] == ["mcp__big__deploy_b5"]
