"""The idle timeout of a streamed response: a stream that stops sending events ends with a clear,
retryable error instead of hanging until the SDK's request timeout (600 s).

A stalled server, one that only sends keep-alives (Anthropic's `ping` events, SSE comments: both
SDKs drop them before the caller sees anything) or one that drips an event in a byte at a time
never trips a read timeout, so the SDK's events are read in a thread (`WatchedEvents`) and the
provider waits for each with a deadline:

- every WAITING_EVERY seconds without an event it yields `Waiting(seconds)` (the step shows "waiting
  for the model (N s)"), and `Waiting(0)` when events flow again;
- after the idle timeout without an event (STREAM_IDLE_TIMEOUT, or CTXAGENT_STREAM_IDLE_TIMEOUT in
  the environment, or the provider's `idle_timeout`) the connection is shut down and StreamIdleError
  raised — a StreamError, so `agent/retry.py` retries it when nothing had arrived, and the step keeps
  the text that had;
- the wait also wakes every TICK seconds, so a cancel (Esc, Ctrl-C) is seen while the stream is silent.
"""

from __future__ import annotations

import os
import queue
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

from ctxagent.agent.providers.protocol import Waiting
from ctxagent.context.errors import StreamError

STREAM_IDLE_TIMEOUT = 90.0  # seconds without an event before a stream is called stalled
IDLE_ENV = "CTXAGENT_STREAM_IDLE_TIMEOUT"
WAITING_EVERY = 5.0  # seconds of silence between "waiting for the model" notices
TICK = 0.25  # seconds: how often a silent stream looks at its cancel event
TIMED_OUT = object()  # `WatchedEvents.next`: nothing arrived within TICK (look at cancel, then ask again)

_EVENT, _END, _ERROR = 0, 1, 2


class StreamIdleError(StreamError):
    """No event arrived for `seconds`, the idle timeout (pings do not count)."""

    def __init__(self, message: str, seconds: float):
        super().__init__(message)
        self.seconds = seconds


def idle_timeout(configured: float | None = None) -> float:
    """The provider's own setting, else the environment's, else STREAM_IDLE_TIMEOUT."""
    if configured is not None:
        return configured
    raw = os.environ.get(IDLE_ENV, "").strip()
    try:
        value = float(raw) if raw else STREAM_IDLE_TIMEOUT
    except ValueError:
        value = STREAM_IDLE_TIMEOUT
    return value if value > 0 else STREAM_IDLE_TIMEOUT


class WatchedEvents:
    """The events of an SDK stream, read by a daemon thread; `next` waits for one with a deadline."""

    def __init__(self, stream: Any, *, timeout: float, label: str):
        self._stream = stream
        self.timeout = timeout
        self.label = label
        self._queue: queue.Queue[tuple[int, Any]] = queue.Queue()
        self._last = time.monotonic()  # when the last event arrived (or the stream opened)
        self._said = 0.0  # the silence last announced by a Waiting (0: none since the last event)
        self._held: tuple[int, Any] | None = None
        self._ended = False  # the pump is done (the body was read to its end, or failed)
        threading.Thread(target=self._pump, args=(iter(stream),), name="stream-watch", daemon=True).start()

    def _pump(self, events: Iterator[Any]) -> None:
        try:
            for ev in events:
                self._queue.put((_EVENT, ev))
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, who raises it in its own thread
            self._queue.put((_ERROR, exc))
            return
        self._queue.put((_END, None))

    def next(self) -> Any:
        """The next SDK event; StopIteration's END marker is raised as StopIteration; a Waiting when
        the silence passes another WAITING_EVERY seconds (Waiting(0) when events resume); TIMED_OUT
        after TICK seconds of nothing; StreamIdleError after the idle timeout."""
        if self._held is not None:  # the event that followed a resume notice
            kind, item = self._held
            self._held = None
            return self._unpack(kind, item)
        silent = time.monotonic() - self._last
        if silent >= self.timeout:
            self.abort()
            raise StreamIdleError(f"the stream from {self.label} sent nothing for {self.timeout:g} s (stalled); "
                                  f"set {IDLE_ENV} to wait longer", self.timeout)
        if silent - self._said >= WAITING_EVERY:
            self._said = float(int(silent // WAITING_EVERY) * WAITING_EVERY)
            return Waiting(self._said)
        try:
            kind, item = self._queue.get(timeout=min(TICK, max(0.01, self.timeout - silent)))
        except queue.Empty:
            return TIMED_OUT
        self._last = time.monotonic()
        if self._said:
            self._said = 0.0
            self._held = (kind, item)  # given at the next call, right after the resume notice
            return Waiting(0.0)
        return self._unpack(kind, item)

    def _unpack(self, kind: int, item: Any) -> Any:
        if kind == _END:
            self._ended = True
            raise StopIteration
        if kind == _ERROR:
            self._ended = True
            raise item
        return item

    def close(self) -> None:
        """Release the stream: a body read to its end keeps its connection for the next request; one
        left half-read (a cut, a cancel, an error) has it shut down, so the reading thread ends too."""
        if self._ended:
            self._stream.close()
        else:
            self.abort()

    def abort(self) -> None:
        """Shut the connection down (that wakes the reading thread; a plain close would not) and close the stream."""
        response = getattr(self._stream, "response", None)
        extensions = getattr(response, "extensions", None) or {}
        network = extensions.get("network_stream") if isinstance(extensions, dict) else None
        sock = network.get_extra_info("socket") if network is not None else None
        if isinstance(sock, socket.socket):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        try:
            self._stream.close()
        except Exception:  # noqa: BLE001 - already broken: nothing more to release
            pass
