"""`ctxagent bench mcp`: the tools slice with 200 MCP tools — schemas sent eagerly vs deferred behind
`search_tools`, and what loading tools mid-session does to the prompt cache.

One synthetic session of `steps` model calls over ctxagent's built-in tools and one MCP server with
`tools` tools (schemas shaped like a real tracker/cloud server's: 3–6 described arguments each). At
step `load_at` the model searches for and loads `loaded` tools. Four arms, the same messages:

- **eager**: every MCP schema in every request (what a client without deferral sends);
- **deferred**: what ctxagent sends — `search_tools` (the catalog defers the server: its schemas pass
  `mcp_defer_share` of the window), the loaded schemas appended after the existing tools;
- **deferred, re-sorted**: the same tools, but the list re-sorted by name after the load (what a
  client that rebuilds its tool list would send) — the cached prefix breaks at the first tool;
- **deferred, nothing loaded**: `search_tools` and no load (what the load itself costs, by difference);
- **no MCP**: the built-in tools alone (the floor);
- **eager, the server adds tools mid-way**: the eager list, and at `load_at` the server's
  `tools/list_changed` brings `loaded` new tools, which the catalog appends (the same path as a
  live server's: agent/mcp/catalog.py `on_change` with the new list) — a removed tool would keep its
  place, so this is the cost of any change to a server's list.

Both APIs put the tool list before the messages, so a load — appended or not — re-writes the cached
history after the tools once; appending keeps everything before it (built-in tools and the tools
loaded earlier) a cache hit. Claude Code's server-side `defer_loading` avoids even that; a client
that only controls the request cannot.

The cache is simulated with the bench's Anthropic rules (tui/lab/bench/cache_cost.py: breakpoints as
the product's provider sets them, 1,024-token minimum, reads 0.1 ×, writes 1.25 ×), all calls within
the TTL. `cost` is input-token units (uncached + 0.1 × read + 1.25 × written).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ctxagent.context.floor.display import echo, echo_json
from ctxagent.context.request import Message, Request, ToolCall, ToolSpec

VERBS = ["list", "get", "create", "update", "delete", "search", "close", "assign", "merge", "archive"]
NOUNS = ["issue", "pull_request", "comment", "label", "milestone", "release", "deployment", "secret", "runner",
         "workflow", "branch", "tag", "project", "team", "member", "webhook", "invoice", "ticket", "alert", "dashboard"]
FIELDS = [("owner", "string", "Account or organisation that owns the repository"),
          ("repo", "string", "Repository name, without the owner"),
          ("state", "string", "Filter by state: open, closed or all"),
          ("per_page", "integer", "Results per page (1-100)"),
          ("page", "integer", "Page number of the results, starting at 1"),
          ("query", "string", "Search words; supports qualifiers such as author:NAME and label:NAME"),
          ("body", "string", "Markdown text of the item"),
          ("labels", "array", "Labels to apply, by name")]


def synthetic_tools(n: int) -> list[dict[str, Any]]:
    """`n` MCP tool listings (name, description, inputSchema) of a realistic size."""
    out = []
    for i in range(n):
        verb, noun = VERBS[i % len(VERBS)], NOUNS[(i // len(VERBS)) % len(NOUNS)]
        fields = FIELDS[: 3 + i % 4]
        props = {name: {"type": kind, "description": desc, **({"items": {"type": "string"}} if kind == "array" else {})}
                 for name, kind, desc in fields}
        out.append({"name": f"{verb}_{noun}_{i}",
                    "description": f"{verb.capitalize()} a {noun.replace('_', ' ')} in the tracker. Returns the "
                                   f"{noun.replace('_', ' ')} records as JSON with their ids, URLs and timestamps; "
                                   f"requires the {verb} permission on the repository.",
                    "inputSchema": {"type": "object", "properties": props, "required": [f[0] for f in fields[:2]]}})
    return out


def _history(steps: int) -> list[list[Message]]:
    """The messages each step adds: an assistant call and a tool result of a few hundred tokens."""
    per_step = []
    for s in range(steps):
        call = ToolCall(f"c{s}", "read_file", {"path": f"src/module_{s}.py"})
        body = "\n".join(f"def function_{s}_{k}(x):\n    return x * {k}  # line {k}" for k in range(40))
        per_step.append([Message("assistant", f"Reading module {s}.", tool_calls=[call]),
                         Message("tool", body, tool_call_id=f"c{s}", name="read_file")])
    return per_step


def run(tools: int = 200, steps: int = 20, load_at: int = 8, loaded: int = 3, window: int = 200_000,
        share: float = 0.10) -> dict[str, Any]:
    import mcp_types as types
    from ctxagent.agent.factory import BASE_PROMPT, default_registry
    from ctxagent.agent.mcp.catalog import SEARCH_TOOL, McpCatalog
    from ctxagent.agent.mcp.client import McpHub, ServerState
    from ctxagent.agent.mcp.config import McpServerConfig
    from ctxagent.agent.mcp.tools import spec_of
    from ctxagent.context.tokens import CachedCounter, count_tool_spec, get_counter
    from ctxagent.tools.sandbox import SandboxPolicy
    from ctxagent.tui.lab.bench.cache_cost import RULES, Bill, Breakpoints, CacheSim
    from ctxagent.tui.lab.bench.request_meter import RequestMeter

    counter = CachedCounter(get_counter("cl100k_base"))
    listing = [types.Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"])
               for t in synthetic_tools(tools)]
    builtin = default_registry().specs()
    servers = {"tracker": McpServerConfig(url="http://127.0.0.1:9/mcp")}
    catalog = McpCatalog(McpHub(servers, Path("."), SandboxPolicy()), servers, counter=counter, window=window,
                         share=share)
    catalog.on_change(ServerState("tracker", "http", "ready", tools=listing))
    first = [t.name for t in catalog.drain()]
    deferred = first == [SEARCH_TOOL]
    picked = catalog.search("create issue", loaded) if deferred else []
    catalog.load(picked)
    loaded_specs = [ToolSpec(t.name, t.description, t.schema) for t in catalog.drain()]
    eager = [spec_of("tracker", t) for t in listing]
    # a server whose list changes at load_at: the catalog's own answer to the new list (offered eagerly)
    grown = McpCatalog(McpHub(servers, Path("."), SandboxPolicy()), servers, counter=counter, window=window,
                       share=1.0)
    grown.on_change(ServerState("tracker", "http", "ready", tools=listing))
    grown.drain()
    extra = [types.Tool(name=f"new_{t.name}", description=t.description, input_schema=t.input_schema)
             for t in listing[:loaded]]
    grown.on_change(ServerState("tracker", "http", "ready", tools=listing[loaded:] + extra))  # some gone, some new
    added_specs = [ToolSpec(t.name, t.description, t.schema) for t in grown.drain()]
    search = catalog.search_tool
    search_spec = ToolSpec(search.name, search.description, search.schema)
    arms: dict[str, Callable[[int], list[ToolSpec]]] = {
        "eager": lambda s: builtin + eager,
        "deferred": lambda s: builtin + [search_spec] + (loaded_specs if s >= load_at else []),
        "deferred, re-sorted": lambda s: sorted(builtin + [search_spec] + (loaded_specs if s >= load_at else []),
                                               key=lambda t: t.name),
        "deferred, nothing loaded": lambda s: builtin + [search_spec],
        "no MCP": lambda s: builtin,
        "eager, the server adds tools mid-way (list_changed)": lambda s: builtin + eager + (
            added_specs if s >= load_at else []),
    }
    system = BASE_PROMPT.format(root="/work/repo")
    history = _history(steps)
    breakpoints = Breakpoints()
    rows = []
    for arm, tools_at in arms.items():
        meter, sim, bill = RequestMeter(counter), CacheSim(RULES["anthropic"]), Bill()
        messages: list[Message] = [Message("user", "Fix the failing test in src/ and open an issue for what you find.")]
        first_schema = 0
        for s in range(steps):
            request = Request(system, list(messages), tools_at(s))
            if s == 0:
                first_schema = sum(count_tool_spec(t, counter) for t in request.tools)
            bill.add(sim.step(meter.chunks(request), breakpoints.product(request)))
            messages += history[s]
        rules = RULES["anthropic"]
        rows.append({"arm": arm, "schema_tokens_step1": first_schema, "input_tokens": round(bill.total),
                     "cache_read_share": round(bill.read / bill.total, 4) if bill.total else 0.0,
                     "cost": round(bill.cost(rules))})
    return {"tools": tools, "steps": steps, "load_at": load_at, "loaded": [t.name for t in loaded_specs],
            "deferred": deferred, "mcp_schema_tokens": catalog.tokens.get("tracker", 0), "window": window,
            "share": share, "rows": rows}


def table(result: dict[str, Any]) -> str:
    lines = [f"MCP schemas: {result['tools']} tools, {result['mcp_schema_tokens']:,} tokens "
             f"({100 * result['mcp_schema_tokens'] / result['window']:.1f} % of a {result['window']:,}-token window; "
             f"deferred past {100 * result['share']:.0f} %). {result['steps']} steps; {len(result['loaded'])} tools "
             f"loaded at step {result['load_at'] + 1}.", "",
             "| arm | tool schemas, step 1 | input tokens, session | cache-read share | cost (input-token units) |",
             "|---|--:|--:|--:|--:|"]
    for r in result["rows"]:
        lines.append(f"| {r['arm']} | {r['schema_tokens_step1']:,} | {r['input_tokens']:,} | "
                     f"{100 * r['cache_read_share']:.1f} % | {r['cost']:,} |")
    return "\n".join(lines)


def add_parser(sub: Any) -> None:
    what = "200 MCP tool schemas: eager vs deferred behind search_tools, and the cache when tools load mid-session"
    p = sub.add_parser("mcp", help=what, description=what + " (a synthetic session; Anthropic's cache rules).")
    p.add_argument("--tools", type=int, default=200, help="tools the MCP server lists (default 200)")
    p.add_argument("--steps", type=int, default=20, help="model calls in the session (default 20)")
    p.add_argument("--load-at", type=int, default=8, help="the step (0-based) whose request first has the loaded tools")
    p.add_argument("--json", action="store_true", help="print the result as JSON")

    def main(args: argparse.Namespace) -> int:
        result = run(args.tools, args.steps, args.load_at)
        if args.json:
            echo_json(result, indent=1)
        else:
            echo(table(result))
        return 0

    p.set_defaults(func=main)
