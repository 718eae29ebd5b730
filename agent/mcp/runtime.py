"""A session's MCP side, as the factory builds it: the hub (servers), the catalog (which tools the
model sees) and the front end's view of both (`McpRuntime`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxagent.agent.mcp.catalog import McpCatalog
from ctxagent.agent.mcp.client import McpHub, ServerState
from ctxagent.agent.mcp.config import MAX_NAME_SHOWN, McpServerConfig, is_mcp_tool, renamed_note, tool_name
from ctxagent.context.tokens import TokenCounter, count_tool_spec
from ctxagent.tools.contract import ToolRegistry
from ctxagent.tools.sandbox import SandboxPolicy

if TYPE_CHECKING:
    from ctxagent.agent.updates import AgentEvent
    from ctxagent.context.history import SessionLog


@dataclass
class ServerRow:
    """One line of `/mcp` and `ctxagent mcp-servers list`."""

    name: str
    transport: str
    state: str
    error: str
    tools: list[tuple[str, int]]  # (tool name as the model sees it, schema tokens)
    deferred: bool
    tokens: int
    renamed: dict[str, str] = field(default_factory=dict)  # name as the model sees it → the server's own


@dataclass
class McpRuntime:
    hub: McpHub
    catalog: McpCatalog
    counter: TokenCounter

    def close(self) -> None:
        self.hub.close()

    def rows(self) -> list[ServerRow]:
        return server_rows(self.hub, self.counter, self.catalog.deferred_servers)

    def markdown(self) -> str:
        """`/mcp`: each server's state and tools with their schema tokens; which are deferred."""
        from ctxagent.context.floor.display import strip_controls

        lines = ["| server | transport | state | tools | schema tokens | |", "|---|---|---|--:|--:|---|"]
        rows = self.rows()
        for r in rows:
            note = "deferred behind search_tools" if r.deferred else r.error
            lines.append(f"| {r.name} | {r.transport} | {r.state} | {len(r.tools)} | {r.tokens:,} | {note} |")
        for r in rows:
            if r.tools:
                lines += ["", f"**{r.name}**: " + ", ".join(f"`{n}` {t:,}" + (
                    f" (renamed: the server's {r.renamed[n][:MAX_NAME_SHOWN]!r})" if n in r.renamed else "")
                    for n, t in r.tools)]
        budget = self.catalog.budget
        lines += ["", f"MCP schemas past {budget:,} tokens (mcp_defer_share of the window) wait behind "
                  "`search_tools`; a tool it loads stays for the session."]
        return strip_controls("\n".join(lines).replace("\x00", ""))


def server_rows(hub: McpHub, counter: TokenCounter, deferred: list[str] | None = None) -> list[ServerRow]:
    from ctxagent.agent.mcp.tools import spec_of

    out = []
    for state in hub.states():
        tools = [(s.name, count_tool_spec(s, counter)) for s in (spec_of(state.name, t) for t in state.tools)]
        renamed = {tool_name(state.name, t.name): t.name for t in state.tools if renamed_note(state.name, t.name)}
        out.append(ServerRow(state.name, state.transport, state.state, state.error, tools,
                             state.name in (deferred or []), sum(n for _, n in tools), renamed))
    return out


def probe(servers: dict[str, McpServerConfig], root: Path, policy: SandboxPolicy,
          counter: TokenCounter) -> list[ServerRow]:
    """Start `servers`, wait for each to be ready or fail, and describe them (`ctxagent mcp-servers`)."""
    hub = McpHub(servers, root, policy).start()
    try:
        hub.wait_started()
        return server_rows(hub, counter)
    finally:
        hub.close()


def last_tool_list(log: SessionLog | None) -> list[dict[str, Any]]:
    """The tool list of the log's last `system_prompt` event (empty for a new session)."""
    if log is None:
        return []
    for ev in reversed(log.events):
        if ev.kind == "system_prompt":
            return list(ev.data.get("tools") or [])
    return []


def start_mcp(servers: dict[str, McpServerConfig], root: Path, policy: SandboxPolicy, registry: ToolRegistry, *,
              counter: TokenCounter, window: int, share: float, log: SessionLog | None = None,
              on_event: Callable[[AgentEvent], None] | None = None) -> McpRuntime | None:
    """Start the enabled servers in the background and hook their tools into `registry`; None when
    there is no server. A resumed session gets its last tool list's MCP tools back at once."""
    enabled = {name: cfg for name, cfg in servers.items() if cfg.enabled}
    if not enabled:
        return None
    from ctxagent.agent.updates import McpStatus

    catalog_box: list[McpCatalog] = []

    def changed(state: ServerState) -> None:
        if catalog_box:
            catalog_box[0].on_change(state)
        if on_event is not None:
            on_event(McpStatus(state.name, state.state, state.error, len(state.tools)))

    hub = McpHub(enabled, root, policy, on_change=changed)
    catalog = McpCatalog(hub, enabled, counter=counter, window=window, share=share)
    catalog_box.append(catalog)
    catalog.preload([t for t in last_tool_list(log) if is_mcp_tool(str(t.get("name", "")))
                     or t.get("name") == "search_tools"])
    registry.add_source(catalog.drain)
    registry.refresh()
    hub.start()
    return McpRuntime(hub, catalog, counter)
