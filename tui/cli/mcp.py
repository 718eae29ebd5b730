"""`ctxagent mcp [--project PATH]`: serve the project's memory over MCP (stdio).
`ctxagent mcp-servers list|test NAME`: the MCP servers this repository's sessions connect to."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ctxagent.context.floor.display import echo
from ctxagent.tui.cli.commands import add_command


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers, "mcp",
        description="Serve this project's memory and spilled output to other agents over MCP (stdio).",
    )
    p.add_argument("--project", default=None,
                   help="repository whose .ctxagent/ to serve (default: the current directory's)")
    p.set_defaults(func=run)
    s = add_command(subparsers, "mcp-servers",
                    description="Start the MCP servers of the configuration ([mcp_servers.NAME] in config.toml, a "
                    "trusted repository's .mcp.json) and show their state, tools and schema tokens.")
    s.add_argument("action", choices=["list", "test"], help="list: every server; test NAME: one, with its tools")
    s.add_argument("name", nargs="?", help="the server to test")
    s.add_argument("--cwd", help="repository whose configuration to read (default: the current directory)")
    s.set_defaults(func=run_servers)
    return p


def run(args: argparse.Namespace) -> int:
    from ctxagent.tui.cli.mcp_server import serve

    return serve(Path(args.project or getattr(args, "cwd", None) or "."))  # the repository it is in (never ~)


def run_servers(args: argparse.Namespace) -> int:
    from ctxagent.agent.config import load_config
    from ctxagent.agent.mcp.runtime import probe
    from ctxagent.agent.session import find_repo_root
    from ctxagent.agent.trust import describe_ignored
    from ctxagent.context.errors import ConfigError
    from ctxagent.context.tokens import CachedCounter, get_counter
    from ctxagent.tools.sandbox import SandboxPolicy

    root = find_repo_root(Path(args.cwd or "."))
    try:
        config = load_config(root)
    except ConfigError as exc:
        echo(f"ctxagent: {exc}", err=True)
        return 2
    ignored = [i for i in config.ignored_keys if i.key.startswith("mcp_servers")]
    if ignored:
        echo(describe_ignored(ignored), err=True)
    servers = config.mcp_servers
    if args.action == "test":
        if not args.name or args.name not in servers:
            known = ", ".join(servers) or "none"
            echo(f"ctxagent: no MCP server {args.name!r} in the configuration (configured: {known})", err=True)
            return 2
        servers = {args.name: servers[args.name].model_copy(update={"enabled": True})}
    if not servers:
        echo("no MCP servers configured ([mcp_servers.NAME] in config.toml, or a trusted repository's .mcp.json)")
        return 0
    rows = probe(servers, root, SandboxPolicy.from_config(config), CachedCounter(get_counter("o200k_base")))
    echo(f"{'server':<20} {'transport':<9} {'state':<8} {'tools':>5} {'schema tokens':>13}  note")
    for row in rows:
        echo(f"{row.name:<20} {row.transport:<9} {row.state:<8} {len(row.tools):>5} {row.tokens:>13,}  {row.error}")
        if args.action == "test":
            for name, tokens in row.tools:
                renamed = f"  (renamed: the server's {row.renamed[name][:120]!r})" if name in row.renamed else ""
                echo(f"  {name:<58} {tokens:>6,}{renamed}")
    skipped = [n for n, c in config.mcp_servers.items() if not c.enabled and args.action == "list"]
    if skipped:
        echo(f"disabled (enabled = false): {', '.join(skipped)}")
    return 0 if all(r.state == "ready" for r in rows) else 1
