"""`ctxagent demo`: try the app without an API key (a scripted model on loopback; see agent/demo.py)."""

from __future__ import annotations

import argparse
from typing import Any

from ctxagent.agent.cli import add_command


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = add_command(
        sub, "demo",
        description="Create a throwaway git repository, start the scripted model server on 127.0.0.1 and "
        "open the app against it (clearly labelled 'scripted demo').",
    )
    p.add_argument("--dir", help="where to create the throwaway repository (default: the system temp dir)")
    p.add_argument("--window", type=int, default=None, help="context window in tokens (default: small, to show the prompts)")
    p.add_argument("--yes", action="store_true", help="allow edits and commands without asking")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ctxagent.agent.demo import DEMO_WINDOW, run_demo

    if args.window is None:
        args.window = DEMO_WINDOW
    return run_demo(args)
