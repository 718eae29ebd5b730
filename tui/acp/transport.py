"""Newline-delimited JSON-RPC over stdio that answers garbage instead of swallowing it.

The SDK's own stdio transport logs a line that is not JSON and reads on, so a client that sent it
never hears why nothing happened, and a JSON line that is not an object (`[1, 2]`, `42`) stops its
receive loop. This one (the SDK's message-level `Transport` seam: send / receive / close) replies
as JSON-RPC 2.0 asks: -32700 "Parse error" for a line that is not JSON or nests deeper than
bounded_json.MESSAGE_DEPTH (json's own RecursionError near 1,000 levels killed the server), -32600
"Invalid Request" for JSON that is not a request object, both with id null; then it reads the next line.

Stdout carries the protocol only: `stdio_transport` writes to a duplicate of file descriptor 1 and
points fd 1 (and `sys.stdout`) at stderr, so nothing the agent, a tool or a library prints can
corrupt the stream.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from ctxagent.context.floor import bounded_json
from ctxagent.context.floor.display import echo

MAX_LINE_BYTES = 50 * 1024 * 1024  # the SDK's own default buffer limit for stdio
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def _error(code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


class LineTransport:
    """One JSON-RPC message per line, both ways."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()
        self._closed = False
        self.rejected = 0  # lines answered with a parse or request error

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError("the connection to the client is closed")
        data = (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        async with self._lock:
            self._writer.write(data)
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                line = exc.partial  # the last line without its newline, or b"" at the end
                if not line.strip():
                    return None
            except asyncio.LimitOverrunError:
                await self._skip_long_line()
                await self._reject(PARSE_ERROR, f"Parse error: a message longer than {MAX_LINE_BYTES:,} bytes")
                continue
            except (ConnectionError, OSError):
                return None
            text = line.strip()
            if not text:
                continue
            try:
                message = bounded_json.loads(text, bounded_json.MESSAGE_DEPTH)  # 200,000 levels: an answer, not a crash
            except ValueError as exc:  # not JSON, too deep (TooDeepError), not UTF-8
                await self._reject(PARSE_ERROR, f"Parse error: the line is not JSON ({exc})")
                continue
            if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not (
                    isinstance(message.get("method"), str) or "id" in message):
                await self._reject(INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 object with a method "
                                                    "(a request or notification) or an id (a response)")
                continue
            return message

    async def _skip_long_line(self) -> None:
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return

    async def _reject(self, code: int, message: str) -> None:
        self.rejected += 1
        echo(f"ctxagent acp: {message}", err=True)
        try:
            await self.send(_error(code, message))
        except (ConnectionError, OSError):
            pass

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._writer.close()
        except (ConnectionError, OSError, RuntimeError):
            pass


async def stdio_transport() -> LineTransport:
    """The transport over this process's stdin and stdout (see the module's note on fd 1)."""
    loop = asyncio.get_running_loop()
    protocol_fd = os.dup(sys.stdout.fileno())
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # prints from now on land on stderr
    sys.stdout = sys.stderr
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = os.fdopen(protocol_fd, "wb", buffering=0)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return LineTransport(reader, writer)
