"""`ctxagent mcp [--project PATH]`: serve the project's memory over MCP (stdio)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ctxagent.agent.cli.commands import add_command


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers, "mcp",
        description="Serve this project's memory and spilled output to other agents over MCP (stdio).",
    )
    p.add_argument("--project", default=None, help="repository whose .ctxagent/ to serve (default: current directory)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ctxagent.agent.mcp.memory_server import serve

    return serve(Path(args.project or ".").resolve())
