"""`ctxagent` command line: the TUI by default, `-p` for headless, and subcommands.

Subcommands live in their own modules; each exposes `add_parser(subparsers)` and sets
`func(args) -> int` on its parser. Register a new one by adding its module to SUBCOMMAND_MODULES.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable

from ctxagent.agent import __version__

SUBCOMMAND_MODULES: list[str] = [
    "ctxagent.agent.cli_server",
    "ctxagent.agent.cli_context",
    "ctxagent.agent.doctor",
    "ctxagent.agent.cli_rewind",
    "ctxagent.agent.cli_memory",
    "ctxagent.agent.cli_mcp",
    "ctxagent.agent.cli_bench",
    "ctxagent.agent.cli_demo",
    "ctxagent.agent.cli_trust",
]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ctxagent", description="A coding agent whose context window is engineered, measured and shown.")
    p.add_argument("--version", action="version", version=f"ctxagent {__version__}")
    p.add_argument("-p", "--prompt", help="run one task headless and exit")
    p.add_argument("--model", help="provider:model, e.g. anthropic:claude-sonnet-4-5 or openai:gpt-5-mini")
    p.add_argument("--base-url", help="base URL of the provider (OpenAI-compatible servers: Ollama, vLLM, ...)")
    p.add_argument("--window", type=int, help="override the model's context window (tokens)")
    p.add_argument("--max-steps", type=int, help="steps per user turn (default 50)")
    p.add_argument("--yes", action="store_true", help="allow edits and commands without asking (yolo mode)")
    p.add_argument("--output", choices=["text", "json"], default="text", help="headless output format")
    p.add_argument("--resume", metavar="ID", nargs="?", const="", help="continue a session (latest if no ID)")
    p.add_argument("--continue", dest="continue_", action="store_true", help="continue the latest session")
    p.add_argument("--strategy", choices=["ctxagent", "full", "window"], help="context strategy (default ctxagent)")
    p.add_argument("--cwd", help="repository to work in (default: current directory)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for mod in SUBCOMMAND_MODULES:
        importlib.import_module(mod).add_parser(sub)
    return p


def main(argv: list[str] | None = None, tui_launcher: Callable[[argparse.Namespace], int] | None = None) -> int:
    """`tui_launcher` opens the app; the console script (tui/entry.py) passes it, keeping imports one-way."""
    args = build_parser().parse_args(argv)
    args.tui_launcher = tui_launcher
    if getattr(args, "func", None) is not None:
        return int(args.func(args) or 0)
    if args.prompt is not None:
        from ctxagent.agent.headless import run_headless

        return run_headless(args)
    if tui_launcher is not None:
        return tui_launcher(args)
    from ctxagent.agent.setup_help import print_setup_help

    return print_setup_help()


if __name__ == "__main__":
    sys.exit(main())
