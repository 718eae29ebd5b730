"""The `ctxagent` console script: the command line (tui/cli/), with the app (tui/app/) as its default screen.

textual is imported only when the app opens.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def _launch_app(args: argparse.Namespace) -> int:
    from ctxagent.tui.app.app import run_app

    return run_app(args, prepare_demo=_prepare_demo)


def _prepare_demo() -> Any:
    """The set-up screen's demo button: the lab's scripted demo (the app does not import the lab)."""
    from ctxagent.tui.lab.scripted.demo import prepare_demo

    return prepare_demo()


def main(argv: list[str] | None = None) -> int:
    from ctxagent.tui.cli.main import main as cli_main
    from ctxagent.tui.cli.process_guard import protect_process

    protect_process()  # before anything reads a key: commands run unsandboxed cannot read our /proc files
    return cli_main(argv, tui_launcher=_launch_app)


if __name__ == "__main__":
    sys.exit(main())
