"""The table of `ctxagent` subcommands, and the helpers every subcommand's parser uses.

A leaf: each subcommand module imports `add_command` from here, and `tui/cli/main.py` reads the
table to list the commands and import only the one that runs.
"""

from __future__ import annotations

import argparse
from typing import Any, NamedTuple


class Command(NamedTuple):
    module: str  # its add_parser(subparsers) adds the full parser (one module may add several commands)
    help: str  # the one line `ctxagent --help` shows; the module's parser uses the same (command_help)


SUBCOMMANDS: dict[str, Command] = {
    "scripted-server": Command("ctxagent.tui.cli.scripted", "serve a scripted model on loopback (Anthropic and OpenAI wire formats)"),
    "report": Command("ctxagent.tui.cli.inspect", "per-step context table for a session"),
    "inspect": Command("ctxagent.tui.cli.inspect", "the exact request the model received at a step"),
    "compact": Command("ctxagent.tui.cli.inspect", "compact a session now (the originals stay in the log)"),
    "config": Command("ctxagent.tui.cli.inspect", "print the effective configuration (keys redacted)"),
    "sessions": Command("ctxagent.tui.cli.inspect", "list this repository's sessions"),
    "doctor": Command("ctxagent.tui.cli.doctor", "check set-up and a session's context health"),
    "rewind": Command("ctxagent.tui.cli.rewind", "go back to before a user turn: code, conversation, or both"),
    "memory": Command("ctxagent.tui.cli.memory", "search and manage the project's memory records"),
    "mcp": Command("ctxagent.tui.cli.mcp", "serve search_memory / store_memory / summarize_context / read_spill over MCP (stdio)"),
    "mcp-servers": Command("ctxagent.tui.cli.mcp", "the MCP servers sessions connect to: list, or test NAME (state, tools, schema tokens)"),
    "bench": Command("ctxagent.tui.cli.bench", "benchmarks on real agent traffic (`ctxagent bench --help` lists them)"),
    "replay": Command("ctxagent.tui.cli.replay", "your own Claude Code sessions replayed: what ctxagent would have sent and kept"),
    "demo": Command("ctxagent.tui.cli.scripted", "try ctxagent without an API key: a scripted model, a throwaway repo"),
    "models": Command("ctxagent.tui.cli.models", "list the models ctxagent knows: window, max output, price, lifecycle"),
    "acp": Command("ctxagent.tui.cli.acp", "serve the Agent Client Protocol on stdio (Zed, Toad and other ACP clients)"),
    "trust": Command("ctxagent.tui.cli.trust",
                     "trust a repository's .ctxagent/config.toml, .mcp.json and commands as they are now (shown first)"),
}


def command_help(name: str) -> str:
    return SUBCOMMANDS[name].help


def add_command(sub: Any, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    """A subcommand's parser, with its help line from SUBCOMMANDS (the one place it is written)."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=command_help(name), **kwargs)
    return parser

# Flags many subcommands share: their help is written once, here, for any parser that left it out.
STANDARD_HELP = {
    "--json": "print JSON instead of text",
    "--cwd": "repository to work in (default: the current directory)",
}

