"""Bounded, visible retries of a model call: exponential backoff with jitter, retry-after honoured.

A stream is retried only while it has yielded nothing but `Waiting` notices (a silent stream says
how long it waits; that is no content): once a text delta reached the caller, a retry would
duplicate it, so the error propagates and the loop keeps (and marks) the partial text. A stalled
stream (providers/stream_watch.py's StreamIdleError) is a StreamError, so it is retried like a cut.
Only retryable ProviderErrors (429, 5xx, overloaded, a connection failure) are retried; a bad key,
an unknown model or a too-long prompt fail at once.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator

from ctxagent.agent.providers.protocol import StreamEvent, Waiting
from ctxagent.agent.providers.stream_watch import StreamIdleError
from ctxagent.context.errors import (
    OverloadedError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamError,
)


def describe_error(e: ProviderError) -> str:
    """A short human label: "rate limited (429)", "server error (502)", ..."""
    if isinstance(e, RateLimitError):
        return f"rate limited ({e.status or 429})"
    if isinstance(e, OverloadedError):
        return f"overloaded ({e.status or 529})"
    if isinstance(e, ServerError):
        return f"server error ({e.status or '5xx'})"
    if isinstance(e, StreamIdleError):
        return f"the stream stalled (nothing for {e.seconds:g} s)"
    if isinstance(e, StreamError):
        return "connection failed"
    return f"{type(e).__name__} ({e.status})" if e.status else type(e).__name__


def backoff_delay(attempt: int, error: ProviderError, *, base_delay: float, max_delay: float,
                  rand: Callable[[], float] = random.random) -> float:
    """Seconds before retry number `attempt` (1 = the first retry).

    retry-after from the server wins (capped at max_delay); otherwise base · 2^(attempt-1), capped,
    with "equal jitter" (half fixed, half random) so parallel clients spread out.
    """
    if error.retry_after is not None:
        return min(max(0.0, float(error.retry_after)), max_delay)
    exp = min(max_delay, base_delay * (2 ** (attempt - 1)))
    return float(exp / 2 + rand() * exp / 2)


def stream_with_retry(
    make_stream: Callable[[], Iterator[StreamEvent]],
    *,
    attempts: int = 4,
    base_delay: float = 1.0,
    max_delay: float = 30.0,
    on_retry: Callable[[str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    cancel: threading.Event | None = None,
    rand: Callable[[], float] = random.random,
) -> Iterator[StreamEvent]:
    """Yield the events of `make_stream()`, starting it again on a retryable error before any event.

    `on_retry` receives e.g. "rate limited (429); retrying in 2.0 s, attempt 2/4". After the last
    attempt the error propagates; its `attempts` attribute says how many were made. With `cancel`,
    a set event ends the waiting and re-raises the error at once.
    """
    attempts = max(1, attempts)
    for attempt in range(1, attempts + 1):
        yielded = False
        try:
            for event in make_stream():
                yielded = yielded or not isinstance(event, Waiting)
                yield event
            return
        except ProviderError as e:
            e.attempts = attempt
            if yielded or not e.retryable or attempt >= attempts:
                raise
            if cancel is not None and cancel.is_set():
                raise
            delay = backoff_delay(attempt, e, base_delay=base_delay, max_delay=max_delay, rand=rand)
            if on_retry is not None:
                on_retry(f"{describe_error(e)}; retrying in {delay:.1f} s, attempt {attempt + 1}/{attempts}")
            if cancel is not None and sleep is time.sleep:
                if cancel.wait(delay):  # wakes early when cancelled
                    raise
            else:
                sleep(delay)
                if cancel is not None and cancel.is_set():
                    raise
