"""A cap on the size of one model response, so a runaway or hostile server cannot exhaust memory.

Two limits, both per response:
- characters of text and tool-call arguments (`MAX_RESPONSE_CHARS`): past it the provider stops
  reading, keeps what arrived, appends `cut_mark()` to the text, drops any half-received tool call and
  ends the step with `Stop(RESPONSE_CAP_STOP)`;
- bytes on the wire (`MAX_RESPONSE_BYTES`, far above what the character cap allows, for SSE framing):
  the HTTP transport raises `ResponseTooLarge` once a body passes it, before the SDK can buffer an
  endless line. Bodies are asked for uncompressed and never decompressed, so the byte count is the
  count that reaches memory (a gzip body from a server that was asked for none reads as garbage and
  fails as a broken stream).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import httpx2
from ctxagent.agent.providers.protocol import RESPONSE_CAP_STOP as RESPONSE_CAP_STOP

MAX_RESPONSE_CHARS = 2_000_000  # ~500k tokens of text: far above any max_tokens ctxagent asks for
MAX_RESPONSE_BYTES = 64 * 1024 * 1024


class ResponseTooLarge(Exception):
    """A response body passed the byte cap (raised from inside the SDK's read loop)."""


def cut_mark(limit: int, unit: str = "characters") -> str:
    return f"\n\n[response cut by ctxagent: it passed {limit:,} {unit}; the rest was not read]"


class TextBudget:
    """Counts the characters of one response; `clip` returns what may still be kept."""

    def __init__(self, limit: int = MAX_RESPONSE_CHARS):
        self.limit = limit
        self.used = 0

    def clip(self, text: str) -> tuple[str, bool]:
        """(the part of `text` within the cap, whether the cap is now reached)."""
        room = self.limit - self.used
        self.used += len(text)
        if len(text) <= room:
            return text, False
        return text[: max(0, room)], True


class _CappedStream(httpx2.SyncByteStream):
    def __init__(self, inner: Any, limit: int):
        self._inner, self._limit = inner, limit

    def __iter__(self) -> Iterator[bytes]:
        seen = 0
        for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise ResponseTooLarge(f"the response passed {self._limit:,} bytes")
            yield chunk

    def close(self) -> None:
        self._inner.close()


class CappedTransport(httpx2.HTTPTransport):
    """The SDK's usual transport (keep-alive sockets), with every response body capped in bytes."""

    def __init__(self, limit: int = MAX_RESPONSE_BYTES):
        options: list[tuple[int, int, int | bool]] = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, True)]
        super().__init__(socket_options=options)
        self.limit = limit

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = super().handle_request(request)
        # We asked for identity; never inflate a compressed body (a gzip bomb would pass the cap).
        if response.headers.get("content-encoding", "identity").lower() != "identity":
            del response.headers["content-encoding"]
        response.stream = _CappedStream(response.stream, self.limit)
        return response


def capped_http_client(sdk: Any, limit: int = MAX_RESPONSE_BYTES) -> Any:
    """An http client for `anthropic.Anthropic` / `openai.OpenAI` (pass the SDK module) with the byte cap."""
    return sdk.DefaultHttpxClient(transport=CappedTransport(limit), headers={"Accept-Encoding": "identity"})


def is_too_large(exc: BaseException) -> bool:
    """The byte cap, even when an SDK wrapped it."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ResponseTooLarge):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
