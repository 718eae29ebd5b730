"""The faults that break a 200 stream without closing it (script.py's `error_event` and SLOW_FAULTS).

A stalled or ping-only stream is what a client's idle timeout is for: the SDKs' own read timeout
never fires while keep-alives arrive, or while an event drips in a byte at a time. Each fault
serves the whole turn as `wire.py` shapes it, and holds it at one point:

- `stall`: after the text (or the first event when there is none), nothing for `seconds`;
- `pings`: there, a keep-alive every PING_EVERY seconds for `seconds` — Anthropic's `ping` event, an
  SSE comment for OpenAI (both SDKs drop them before the caller sees anything);
- `drip`: the next event written one byte at a time, spread over `seconds`;
- `error_event`: after the text, an `error` event inside the 200 stream, and the end of the body.

Waits end early when the server stops (`stopping`), so a test's server shuts down at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ctxagent.tui.lab.scripted import wire
from ctxagent.tui.lab.scripted.script import DEFAULT_STALL, SLOW_FAULTS, Turn

PING_EVERY = 0.2  # seconds between keep-alives
ANTHROPIC_PING = wire.sse_event("ping", {"type": "ping"})
OPENAI_PING = b": keep-alive\n\n"
ANTHROPIC_ERROR = wire.sse_event("error", {"type": "error", "error": {"type": "overloaded_error",
                                                                      "message": "Overloaded (scripted, mid-stream)."}})
OPENAI_ERROR = wire.sse_event(None, {"error": {"message": "The server had an error while processing your request "
                                                          "(scripted, mid-stream).", "type": "server_error",
                                               "param": None, "code": None}})


def events(fmt: str, turn: Turn, n: int, model: str, usage: dict[str, int],
           include_usage: bool) -> tuple[list[bytes], int]:
    """The SSE events of the whole turn, and the index the fault holds the stream before: right after
    the text's deltas, or after the first event when there is no text."""
    blobs: list[bytes] = []
    hold = 1
    if fmt == wire.ANTHROPIC:
        for name, data in wire.anthropic_events(turn, n, model, usage):
            blobs.append(wire.sse_event(name, data))
            if name == "content_block_delta" and data["delta"].get("type") == "text_delta":
                hold = len(blobs)
    else:
        for chunk in wire.openai_chunks(turn, n, model, usage, include_usage=include_usage):
            blobs.append(wire.sse_event(None, chunk))
            if any(c.get("delta", {}).get("content") for c in chunk.get("choices") or []):
                hold = len(blobs)
        blobs.append(b"data: [DONE]\n\n")
    return blobs, min(hold, len(blobs))


def serve(write: Callable[[bytes], None], fmt: str, turn: Turn, blobs: list[bytes], hold: int,
          stopping: threading.Event) -> None:
    """Write `blobs` with `turn.fault` applied at `hold` (the caller starts and ends the body)."""
    seconds = turn.seconds if turn.seconds is not None else DEFAULT_STALL
    for blob in blobs[:hold]:
        write(blob)
    rest = blobs[hold:]
    if turn.fault == "error_event":
        write(ANTHROPIC_ERROR if fmt == wire.ANTHROPIC else OPENAI_ERROR)
        return
    if turn.fault == "stall":
        stopping.wait(seconds)
    elif turn.fault == "pings":
        ping = ANTHROPIC_PING if fmt == wire.ANTHROPIC else OPENAI_PING
        for _ in range(max(1, round(seconds / PING_EVERY))):
            write(ping)
            if stopping.wait(PING_EVERY):
                break
    elif turn.fault == "drip" and rest:
        first, rest = rest[0], rest[1:]
        pause = seconds / max(1, len(first))
        for i in range(len(first)):
            write(first[i:i + 1])
            if stopping.wait(pause):
                break
    for blob in rest:
        write(blob)


def is_stream_fault(turn: Turn, body: dict[str, Any]) -> bool:
    """Served here: a slow fault or a mid-stream error on a streamed request."""
    return body.get("stream") is True and (turn.fault in SLOW_FAULTS or turn.fault == "error_event")
