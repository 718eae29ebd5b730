"""The scripted model server's command line: `ctxagent scripted-server` (tui/cli/scripted.py adds it to the
CLI) and `python -m ctxagent.tui.lab.scripted`."""

from __future__ import annotations

import argparse
import signal

from ctxagent.context.floor.display import echo
from ctxagent.tui.lab.scripted import script as scripted_script, server as scripted_server
from ctxagent.tui.lab.scripted.server import ScriptedServer

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
