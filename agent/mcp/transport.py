"""The two ways to reach a server, as the SDK's `ClientSession` wants them (a pair of streams).

- stdio: the server's command starts through the commands' launcher (tools/sandbox/launch.py): the
  allowlisted environment plus the server's own `env`, and bubblewrap unless the user's own config
  says `sandbox = false` for the server. The server's `env` goes inside the sandbox (bwrap
  `--setenv`), never into the environment bwrap itself starts with, and a variable that would run
  code its command line does not show (LD_PRELOAD, BASH_ENV, NODE_OPTIONS, …) is refused in every
  mode (context/floor/program_env.py; the config refuses it first, agent/mcp/config.py). The SDK's `stdio_client` cannot take the launcher and reads
  a line of any length into memory; this reader caps each message (`MAX_MESSAGE_BYTES`): a longer
  one is skipped as it streams by, never held, and the request it answered gets an error instead.
- Streamable HTTP: the SDK's `streamable_http_client` over an httpx client with the configured
  headers and the bearer token read from its environment variable at connect time (never stored on
  the config or logged); SSE events are capped at the same size, a JSON response announcing a larger
  body is refused before it is read, and one that announces no size (chunked) is read through
  `CappedStream`, which gives up at the same size — an endless body is never held. Answers are asked
  for uncompressed (`Accept-Encoding: identity`): a compressed JSON body could inflate past any cap
  of its compressed bytes, so one that comes compressed anyway is refused unread.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from anyio.abc import Process
from ctxagent.agent.mcp.config import McpServerConfig
from ctxagent.context.errors import ConfigError
from ctxagent.tools.sandbox import SandboxPolicy, prepare_launch
from mcp.shared.message import SessionMessage

# The SDK logs what it turns into an error answer (a refused body: a traceback at ERROR); with no
# handler configured, Python would print it on stderr, over the app's screen. The error reaches the
# model and /mcp; a front end that configures logging (`ctxagent acp`) still gets the records.
logging.getLogger("mcp").addHandler(logging.NullHandler())

MAX_MESSAGE_BYTES = 32 * 1024 * 1024  # past a 10 MB result (spilled), short of holding anything unbounded
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,20})')


def too_large(size: int) -> str:
    return (f"the server's answer was larger than {MAX_MESSAGE_BYTES // (1024 * 1024)} MB "
            f"({size:,} bytes or more) and was not read")


@asynccontextmanager
async def stdio_streams(cfg: McpServerConfig, root: Path, policy: SandboxPolicy,
                        errlog: Any = None, name: str = "") -> AsyncIterator[tuple[Any, Any, Process | None]]:
    assert cfg.command
    command = shlex.join([cfg.command, *cfg.args])
    # `exec`: the server is the shell's process, so closing its stdin and killing its group end it
    line = f"cd {shlex.quote(str((root / cfg.cwd).resolve()))} && exec {command}" if cfg.cwd else f"exec {command}"
    # the server's own `env` as written (a token the server needs is the point of it, so it is not
    # filtered like the variables inherited from ctxagent's environment), for the server alone
    launch = prepare_launch(line, root, policy, program_env=cfg.env,
                            owner=f"mcp_servers.{name}.env" if name else "the MCP server's env",
                            server=True)  # lives as long as the session
    process = await anyio.open_process(launch.argv, env=launch.env, cwd=str(root), pass_fds=launch.pass_fds,
                                       stderr=errlog if errlog is not None else anyio_devnull(),
                                       start_new_session=True)
    launch.close_fds()
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](16)

    async def reader() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        skipping = 0  # > 0 while a too-long line streams by: the bytes seen of it
        head = b""
        async with read_send:
            try:
                async for chunk in process.stdout:
                    while chunk:
                        cut = chunk.find(b"\n")
                        part, chunk = (chunk, b"") if cut < 0 else (chunk[:cut], chunk[cut + 1:])
                        if skipping:
                            skipping += len(part)
                        else:
                            buffer += part
                            if len(buffer) > MAX_MESSAGE_BYTES:
                                head, skipping = bytes(buffer[:4096]), len(buffer)
                                buffer.clear()
                        if cut < 0:
                            continue
                        if skipping:
                            await read_send.send(_oversized(head, skipping))
                            skipping, head = 0, b""
                        elif buffer.strip():
                            await read_send.send(_parse(bytes(buffer)))
                            buffer.clear()
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
                pass

    async def writer() -> None:
        assert process.stdin is not None
        async with write_recv:
            try:
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode())
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                await read_send.aclose()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            try:
                yield read_recv, write_send, process
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process)
            launch.finish()


def anyio_devnull() -> int:
    import subprocess

    return subprocess.DEVNULL


async def _stop(process: Process) -> None:
    if process.stdin is not None:
        try:
            await process.stdin.aclose()
        except (OSError, anyio.BrokenResourceError):
            pass
    with anyio.move_on_after(2):
        await process.wait()
        return
    try:
        os.killpg(process.pid, 9)  # its own session: the sandbox and the server go together
    except (ProcessLookupError, PermissionError):
        pass
    with anyio.move_on_after(2):
        await process.wait()


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return ValueError(f"the server wrote something that is not JSON-RPC: {str(exc)[:300]}")


def _oversized(head: bytes, size: int) -> SessionMessage | Exception:
    """The error answer for the request a skipped message answered (its id is near the start)."""
    found = _ID.search(head)
    if found is None:
        return ValueError(too_large(size))
    raw_id = json.loads(found.group(1))
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=raw_id,
                                             error=types.ErrorData(code=-32603, message=too_large(size))))


def http_headers(cfg: McpServerConfig, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The configured headers and, from its variable, the bearer token (ConfigError when unset)."""
    headers = dict(cfg.headers)
    if cfg.bearer_token_env_var:
        token = (os.environ if environ is None else environ).get(cfg.bearer_token_env_var)
        if not token:
            raise ConfigError(f"bearer_token_env_var: the environment variable {cfg.bearer_token_env_var} is not set")
        headers["Authorization"] = f"Bearer {token}"
    return headers


class Refused(httpx2.StreamError):
    """A response body not read (too large, compressed). A StreamError: the SDK answers the request
    it was for with an error and the session goes on (any other exception would end the transport)."""


class CappedStream(httpx2.AsyncByteStream):
    """A response body read up to `MAX_MESSAGE_BYTES`: past it, the read fails with `too_large` and
    the connection is closed (for a body that does not say its size). `refuse`: fail at once."""

    def __init__(self, inner: Any, limit: int = MAX_MESSAGE_BYTES, refuse: str = ""):
        self.inner, self.limit, self.refuse = inner, limit, refuse

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.refuse:
            raise Refused(self.refuse)
        seen = 0
        async for chunk in self.inner:
            seen += len(chunk)
            if seen > self.limit:
                raise Refused(too_large(seen))
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


@asynccontextmanager
async def http_streams(cfg: McpServerConfig) -> AsyncIterator[tuple[Any, Any, Process | None]]:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    assert cfg.url

    async def refuse_large(response: httpx2.Response) -> None:
        if response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            return  # each event is capped by the SDK's reader (max_sse_event_size), a stream may run long
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        length = response.headers.get("content-length") or ""
        refuse = ""
        if encoding not in ("", "identity"):
            refuse = f"the server compressed its answer ({encoding[:40]}) though asked not to; it was not read"
        elif length.isdigit() and int(length) > MAX_MESSAGE_BYTES:
            refuse = too_large(int(length))
        # a chunked body says no length: it is read capped all the same
        response.stream = CappedStream(response.stream, refuse=refuse)

    client = create_mcp_http_client(headers={"Accept-Encoding": "identity", **http_headers(cfg)},
                                    timeout=httpx2.Timeout(cfg.startup_timeout, read=max(cfg.tool_timeout, 30.0)))
    client.event_hooks["response"].append(refuse_large)
    async with client, streamable_http_client(cfg.url, http_client=client, max_sse_event_size=MAX_MESSAGE_BYTES) as (r, w):
        yield r, w, None
