"""The `ctxagent` console script: the CLI from `ctxagent.agent`, with the app as its default screen.

It lives in tui/ so imports stay one-way (tui → agent); textual is imported only when the app opens.
"""

from __future__ import annotations

import argparse
import sys


def _launch_app(args: argparse.Namespace) -> int:
    from ctxagent.tui.app import run_app

    return run_app(args)


def main(argv: list[str] | None = None) -> int:
    from ctxagent.agent import cli_main, protect_process

    protect_process()  # before anything reads a key: commands run unsandboxed cannot read our /proc files
    return cli_main(argv, tui_launcher=_launch_app)


if __name__ == "__main__":
    sys.exit(main())
