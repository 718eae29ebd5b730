"""`ctxagent scripted-server` and `ctxagent demo`: the scripted model on loopback, for tests and for trying
the app without an API key (agent/scripted/server.py, agent/scripted/demo.py)."""

from __future__ import annotations

import argparse
import signal
from typing import Any

from ctxagent.agent.cli.commands import add_command
from ctxagent.agent.scripted import script as scripted_script, server as scripted_server
from ctxagent.agent.scripted.server import ScriptedServer
from ctxagent.context.floor.display import echo


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


SCRIPT_HELP = (scripted_server.__doc__ or "").split("\n\n", 1)[1] + "\nThe script format\n\n" + (scripted_script.__doc__ or "").split("\n\n", 1)[1]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("script", help="a JSON file: a list of turns, or {\"turns\": [...], \"models\": [...]} (format below)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (default 0: any free port)")
    p.add_argument("--record", metavar="FILE", help="append one JSON line per request: {path, body, key} (key: a fingerprint of the credential, never the key)")


def serve(args: argparse.Namespace) -> int:
    """Run the server in the foreground until SIGINT / SIGTERM."""
    from ctxagent.context.errors import ConfigError

    try:
        server = ScriptedServer(args.script, record=args.record, host=args.host, port=args.port)
        base_url = server.bind()
    except (ConfigError, OSError) as e:
        echo(f"scripted-server: {e}", err=True)
        return 2

    def _terminate(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _terminate)
    echo(f"listening on {base_url}")  # flushed: the caller reads this line to learn the port
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ctxagent scripted-server", description="loopback scripted model server",
                                epilog=SCRIPT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return serve(p.parse_args(argv))


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
    from ctxagent.agent.scripted.demo import DEMO_WINDOW, run_demo

    if args.window is None:
        args.window = DEMO_WINDOW
    return run_demo(args)
