"""`ctxagent scripted-server` and `ctxagent demo`: the scripted model on loopback, for tests and for trying
the app without an API key (tui/lab/scripted/server.py, tui/lab/scripted/demo.py)."""

from __future__ import annotations

import argparse
from typing import Any

from ctxagent.tui.cli.commands import add_command
from ctxagent.tui.lab.scripted.serve import SCRIPT_HELP, add_arguments, serve


def add_parser(sub: Any) -> None:
    """Both commands of this module: scripted-server, then demo."""
    p: argparse.ArgumentParser = add_command(
        sub, "scripted-server",
        description="Serve a scripted model on loopback from a JSON script of turns, for tests and demos.",
        epilog=SCRIPT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(p)
    p.set_defaults(func=serve)
    add_demo_parser(sub)


def add_demo_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = add_command(
        sub, "demo",
        description="Create a throwaway git repository, start the scripted model server on 127.0.0.1 and "
        "open the app against it (clearly labelled 'scripted demo').",
    )
    p.add_argument("--dir", help="where to create the throwaway repository (default: the system temp dir)")
    p.add_argument("--window", type=int, default=None, help="context window in tokens (default: small, to show the prompts)")
    p.add_argument("--yes", action="store_true", help="allow edits and commands without asking")
    p.add_argument("--keep", action="store_true", help="keep the throwaway repository when the app closes "
                   "(default: it and its trust entry are removed)")
    p.set_defaults(func=_run_demo)


def _run_demo(args: argparse.Namespace) -> int:
    from ctxagent.tui.lab.scripted.demo import DEMO_WINDOW, run_demo

    if args.window is None:
        args.window = DEMO_WINDOW
    return run_demo(args)
