"""Which MCP tools the model sees: schemas on a budget (`McpCatalog`) and `search_tools`.

Servers come up in the background, so their tools join the registry as they arrive (the registry
drains `McpCatalog.drain` before each build) — always appended after the tools already there, so
the tool list sent so far stays a byte-identical prefix of the new one. While the MCP schemas fit in
`share` of the window (default 10 %, as Claude Code) a ready server's tools are offered at once;
a server whose tools would pass it is **deferred**: its tools wait in a pool, and the model gets
`search_tools` (BM25 over names and descriptions with the memory index's tokenizer, CJK-aware:
context/language/terms.py), which loads the best matches for the rest of the session. A loaded tool
stays loaded: the session log's `system_prompt` events record every tool list, and a resumed
session starts with the MCP tools of its last one, in the same order (`preload`).

A server's `tools/list_changed` (agent/mcp/client.py) comes here as a new list. Its new tools go the
way a server's tools go (offered and appended while they fit the share, else into the pool behind
`search_tools`); nothing already sent moves. A tool the server no longer lists leaves the pool, but
one the model was shown keeps its schema where it is, for the session: dropping it would rewrite
the tool list, which both APIs put before the system prompt's cached blocks and every message — the
whole cached prefix, at a step or at a compaction alike (a compaction rewrites only the messages and
keeps the tools' cache) — to save the few hundred tokens of one schema. Calling it answers a clear
error (`McpTool.run`). A tool whose schema changed keeps the schema first sent, for the same reason;
the server validates the arguments it gets.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from typing import TYPE_CHECKING, Any

from ctxagent.agent.mcp.client import ServerState
from ctxagent.agent.mcp.config import McpServerConfig, server_of, server_part
from ctxagent.agent.mcp.tools import McpTool, spec_of
from ctxagent.context.language.terms import terms
from ctxagent.context.request import ToolSpec
from ctxagent.context.tokens import TokenCounter, count_tool_spec
from ctxagent.tools.contract import FunctionTool, Tool, ToolArgs, ToolContext, ToolResult
from pydantic import Field

if TYPE_CHECKING:
    from ctxagent.agent.mcp.client import McpHub

SEARCH_TOOL = "search_tools"
SEARCH_DESCRIPTION = ("Find tools of the connected MCP servers that are not loaded yet, by what they do (words in "
                      "English or 中文, or exact tool names). The best matches are loaded: you can call them from your "
                      "next step, for the rest of the session.")
DEFAULT_MATCHES = 5
MAX_MATCHES = 20


class SearchToolsArgs(ToolArgs):
    query: str = Field(description="what the tool should do, or exact tool names separated by spaces")
    limit: int | None = Field(None, ge=1, le=MAX_MATCHES, description=f"how many to load (default {DEFAULT_MATCHES})")


def _doc_terms(spec: ToolSpec) -> list[str]:
    return terms(spec.name.replace("_", " ") + " " + spec.description)


class McpCatalog:
    def __init__(self, hub: McpHub, servers: dict[str, McpServerConfig], *, counter: TokenCounter, window: int,
                 share: float):
        self.hub, self.servers, self.counter = hub, servers, counter
        self.budget = int(window * share)
        self._lock = threading.Lock()
        self._pending: list[Tool] = []  # to be appended to the registry, in this order
        self._offered: set[str] = set()  # names handed to the registry (or waiting in _pending)
        self._pool: dict[str, McpTool] = {}  # deferred and not loaded yet
        self._eager_tokens = 0
        self.deferred_servers: list[str] = []
        self.tokens: dict[str, int] = {}  # schema tokens of each server's listed tools, all of them
        self.search_tool = FunctionTool(SEARCH_TOOL, SEARCH_DESCRIPTION, SearchToolsArgs, "read", self._search)

    # -- what the registry pulls ------------------------------------------------------------------
    def drain(self) -> list[Tool]:
        with self._lock:
            out, self._pending = self._pending, []
        return out

    def _offer(self, tools: list[Tool]) -> None:
        for tool in tools:
            if tool.name not in self._offered:
                self._offered.add(tool.name)
                self._pending.append(tool)

    def _tool(self, server: str, spec: ToolSpec, remote: str) -> McpTool:
        return McpTool(self.hub, server, remote, spec, asks=self.servers[server].asks(remote))

    def preload(self, logged: list[dict[str, Any]]) -> None:
        """The MCP tools of the log's last tool list, offered now in their order (a resume sends the
        same tools it sent before; each answers with the server's state until the server is ready)."""
        by_safe = {server_part(name): name for name in self.servers}  # one part per server, never shared
        tools: list[Tool] = []
        for entry in logged:
            name = str(entry.get("name", ""))
            if name == SEARCH_TOOL:
                tools.append(self.search_tool)
                continue
            server = by_safe.get(server_of(name) or "")
            if server is None:
                continue  # a server no longer configured: its tools are gone from this session
            spec = ToolSpec(name, str(entry.get("description", "")), dict(entry.get("input_schema") or {}))
            remote = name.split("__", 2)[-1]  # McpTool finds the server's own name once it is ready
            tools.append(self._tool(server, spec, remote))
        with self._lock:
            self._offer(tools)

    # -- servers arriving (the hub's thread) ------------------------------------------------------
    def on_change(self, state: ServerState) -> None:
        """A server is ready, or listed its tools again (tools/list_changed)."""
        if state.state != "ready" or state.name not in self.servers:
            return
        tools = [self._tool(state.name, spec_of(state.name, t), t.name) for t in state.tools]
        listed = {t.name for t in tools}
        with self._lock:
            first = state.name not in self.tokens
            self.tokens[state.name] = sum(count_tool_spec(t.spec, self.counter) for t in tools)
            for name in [n for n, t in self._pool.items() if t.server == state.name and n not in listed]:
                del self._pool[name]  # no longer listed: search_tools never loads it
            fresh = [t for t in tools if t.name not in self._offered and t.name not in self._pool]
            # the first list counts whole (a resumed session offered part of it already), a later one its new tools
            tokens = self.tokens[state.name] if first else sum(count_tool_spec(t.spec, self.counter) for t in fresh)
            if (state.name not in self.deferred_servers and self._eager_tokens + tokens <= self.budget
                    and (not first or not self.deferred_servers)):
                self._eager_tokens += tokens
                self._offer(list(fresh))
                return
            if state.name not in self.deferred_servers:
                self.deferred_servers.append(state.name)
            self._offer([self.search_tool])
            self._pool.update({t.name: t for t in fresh})

    # -- search_tools -----------------------------------------------------------------------------
    def search(self, query: str, limit: int = DEFAULT_MATCHES) -> list[McpTool]:
        with self._lock:
            pool = list(self._pool.values())
        exact = [t for t in pool if t.name in query.split()]
        if exact:
            return exact[:limit]
        docs = [Counter(_doc_terms(t.spec)) for t in pool]
        query_terms = set(terms(query.replace("_", " ")))
        if not docs or not query_terms:
            return []
        n = len(docs)
        avg = sum(sum(d.values()) for d in docs) / n
        df = Counter(term for d in docs for term in d)
        k1, b = 1.2, 0.75
        scored = []
        for tool, doc in zip(pool, docs, strict=True):
            length = sum(doc.values())
            score = 0.0
            for term in query_terms & doc.keys():
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                tf = doc[term]
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg))
            if score > 0:
                scored.append((score, tool.name, tool))
        scored.sort(key=lambda x: (-x[0], x[1]))
        return [tool for _, _, tool in scored[:limit]]

    def load(self, tools: list[McpTool]) -> None:
        with self._lock:
            for tool in tools:
                self._pool.pop(tool.name, None)
            self._offer(list(tools))

    def _search(self, args: SearchToolsArgs, ctx: ToolContext) -> ToolResult:
        with self._lock:
            waiting = len(self._pool)
        found = self.search(args.query, args.limit or DEFAULT_MATCHES)
        if not found:
            return ToolResult(f"no tool matches {args.query!r} ({waiting} tools not loaded yet); try other words")
        self.load(found)
        lines = [f"Loaded {len(found)} tool(s); call them from your next step:"]
        lines += [f"- {t.name}: {t.description[:300]}" for t in found]
        return ToolResult("\n".join(lines), meta={"mcp": {"loaded": [t.name for t in found]}})
