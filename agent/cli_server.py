"""`ctxagent scripted-server`: the loopback model server for tests and demos (see scripted_server.py)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    from ctxagent.agent.scripted_server import SCRIPT_HELP, add_arguments, serve

    p: argparse.ArgumentParser = sub.add_parser(
        "scripted-server",
        help="serve a scripted model on loopback (Anthropic and OpenAI wire formats)",
        description="Serve a scripted model on loopback from a JSON script of turns, for tests and demos.",
        epilog=SCRIPT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(p)
    p.set_defaults(func=serve)
