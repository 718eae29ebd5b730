"""`ctxagent acp`: serve the Agent Client Protocol on stdio, for Zed, Toad and other ACP clients.

The model, base URL, window, strategy and sandbox come from the top-level flags given before the
command (`ctxagent --model anthropic:claude-sonnet-5-5 acp`) and from the config, as for the app;
each session's repository is the `cwd` its client sends. Stdout carries the protocol only; what
ctxagent says besides goes to stderr (editors show it in their agent log).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from typing import TYPE_CHECKING, Any, cast

from ctxagent.tui.cli.commands import add_command

if TYPE_CHECKING:
    from acp.interfaces import Agent


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = add_command(
        sub, "acp",
        description="Serve the Agent Client Protocol (JSON-RPC over stdio) so that an editor or terminal client "
        "(Zed, Toad, JetBrains, Neovim plugins) runs ctxagent sessions. Put model flags before the command: "
        "ctxagent --model anthropic:claude-sonnet-5-5 acp",
    )
    p.add_argument("--permission-timeout", type=float, default=None, metavar="SECONDS",
                   help="how long an edit or command waits for the editor's answer before it counts as refused "
                   "(default 300)")
    p.set_defaults(func=cmd_acp)


def cmd_acp(args: argparse.Namespace) -> int:
    try:
        import acp  # noqa: F401 - only to say clearly when the SDK is missing
    except ImportError:
        sys.stderr.write("ctxagent acp needs the agent-client-protocol package: pip install 'agent-client-protocol==0.12.1'\n")
        return 2
    if args.permission_timeout is not None and args.permission_timeout <= 0:
        sys.stderr.write("ctxagent acp: --permission-timeout must be a positive number of seconds\n")
        return 2
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="ctxagent acp: %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        return 130
    return 0


async def serve(args: argparse.Namespace) -> None:
    from acp.agent.connection import AgentSideConnection
    from ctxagent.tui.acp.server import DEFAULT_PERMISSION_SECONDS, AcpServer
    from ctxagent.tui.acp.transport import stdio_transport

    server = AcpServer(args, permission_timeout=args.permission_timeout or DEFAULT_PERMISSION_SECONDS)
    transport = await stdio_transport()
    # cast: the SDK's Agent protocol lists every optional method (fork, modes, …); its router answers
    # "method not found" for the ones AcpServer leaves out, which is what a client should hear
    conn = AgentSideConnection(cast("Agent", server), transport, listening=False)
    listen = asyncio.ensure_future(conn.listen())  # until the client closes stdin
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGHUP):  # an editor stopping its agent: end like a disconnect
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, listen.cancel)
    try:
        await asyncio.wait({listen})
    finally:
        await server.shutdown()  # running turns cancelled and finished, their logs closed
        await asyncio.shield(conn.close())
