"""`ctxagent scripted-server`: the loopback model server for tests and demos (see scripted_server.py)."""

from __future__ import annotations

import argparse
from typing import Any

from ctxagent.agent.cli import add_command


def add_parser(sub: Any) -> None:
    from ctxagent.agent.scripted_server import SCRIPT_HELP, add_arguments, serve

    p: argparse.ArgumentParser = add_command(
        sub, "scripted-server",
        description="Serve a scripted model on loopback from a JSON script of turns, for tests and demos.",
        epilog=SCRIPT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(p)
    p.set_defaults(func=serve)
