"""stream_with_retry: which errors retry, when, how long it waits, and what the user is told."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from ctxagent.agent.providers.openai import OpenAIProvider
from ctxagent.agent.providers.protocol import Stop, StreamEvent, TextDelta
from ctxagent.agent.retry import backoff_delay, stream_with_retry
from ctxagent.context.errors import (
    AuthError,
    ContextLengthError,
    OverloadedError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamError,
)
from ctxagent.context.request import Message, Request, Usage
from ctxagent.tui.lab.scripted.server import ScriptedServer

OK: list[StreamEvent] = [TextDelta("hi"), Usage(1, 1), Stop("end_turn")]


class Flaky:
    """make_stream that fails with the given errors first, then succeeds."""

    def __init__(self, *errors: ProviderError, partial: str = ""):
        self.errors = list(errors)
        self.partial = partial
        self.calls = 0

    def __call__(self) -> Iterator[StreamEvent]:
        self.calls += 1
        if self.errors:
            error = self.errors.pop(0)
            if self.partial:
                yield TextDelta(self.partial)
            raise error
        yield from OK


def run(make: Flaky, **kw: object) -> tuple[list[StreamEvent], list[str], list[float]]:
    messages: list[str] = []
    sleeps: list[float] = []
    events = list(stream_with_retry(make, on_retry=messages.append, sleep=sleeps.append,
                                    rand=lambda: 0.5, **kw))  # type: ignore[arg-type]
    return events, messages, sleeps


def test_rate_limit_honours_retry_after_and_says_so() -> None:
    events, messages, sleeps = run(Flaky(RateLimitError("429", status=429, retry_after=2.0)))
    assert events == OK and sleeps == [2.0]
    assert messages == ["rate limited (429); retrying in 2.0 s, attempt 2/4"]


def test_retry_after_is_capped_by_max_delay() -> None:
    _, _, sleeps = run(Flaky(RateLimitError("429", status=429, retry_after=3600)), max_delay=5.0)
    assert sleeps == [5.0]


def test_exponential_backoff_with_jitter_for_5xx_overloaded_and_resets() -> None:
    make = Flaky(ServerError("boom", status=502), OverloadedError("busy", status=529), StreamError("reset"))
    events, messages, sleeps = run(make, base_delay=1.0)
    assert events == OK and make.calls == 4
    # base·2^(n-1), half fixed and half jitter (rand = 0.5 → 0.75 of the step)
    assert sleeps == [0.75, 1.5, 3.0]
    assert messages[0] == "server error (502); retrying in 0.8 s, attempt 2/4"
    assert messages[1].startswith("overloaded (529); retrying in 1.5 s, attempt 3/4")
    assert messages[2].startswith("connection failed; retrying in 3.0 s, attempt 4/4")


def test_backoff_jitter_stays_within_bounds() -> None:
    err = ServerError("x", status=500)
    for attempt in range(1, 8):
        lo = backoff_delay(attempt, err, base_delay=1.0, max_delay=30.0, rand=lambda: 0.0)
        hi = backoff_delay(attempt, err, base_delay=1.0, max_delay=30.0, rand=lambda: 0.999999)
        step = min(30.0, 2 ** (attempt - 1))
        assert lo == pytest.approx(step / 2) and step / 2 <= hi <= step


def test_gives_up_after_the_last_attempt_with_the_original_error() -> None:
    make = Flaky(*[ServerError("down", status=500)] * 5)
    with pytest.raises(ServerError) as err:
        run(make, attempts=3)
    assert make.calls == 3 and err.value.attempts == 3  # type: ignore[attr-defined]


@pytest.mark.parametrize("error", [AuthError("bad key", status=401), ContextLengthError("too long", status=400)])
def test_non_retryable_errors_fail_at_once(error: ProviderError) -> None:
    make = Flaky(error)
    with pytest.raises(type(error)):
        run(make)
    assert make.calls == 1


def test_no_retry_once_an_event_was_yielded() -> None:
    make = Flaky(StreamError("cut"), partial="half an")
    seen: list[StreamEvent] = []
    with pytest.raises(StreamError):
        for ev in stream_with_retry(make, sleep=lambda s: None):
            seen.append(ev)
    assert seen == [TextDelta("half an")] and make.calls == 1


def test_cancel_during_the_wait_stops_retrying() -> None:
    cancel = threading.Event()
    cancel.set()
    make = Flaky(RateLimitError("429", status=429, retry_after=30))
    with pytest.raises(RateLimitError):
        list(stream_with_retry(make, cancel=cancel))
    assert make.calls == 1


def test_real_sdk_429_then_success_through_the_server() -> None:
    script = [{"fault": "429", "retry_after": 0}, {"fault": "500"}, {"text": "recovered 恢复了"}]
    req = Request("", [Message("user", "go")], [])
    with ScriptedServer(script) as srv:
        p = OpenAIProvider("gpt-x", api_key="k", base_url=srv.base_url)
        messages: list[str] = []
        sleeps: list[float] = []
        events = list(stream_with_retry(lambda: p.stream(req), on_retry=messages.append, sleep=sleeps.append,
                                        base_delay=0.01))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "recovered 恢复了"
    assert messages[0] == "rate limited (429); retrying in 0.0 s, attempt 2/4"
    assert messages[1].startswith("server error (500); retrying in")
    assert sleeps[0] == 0.0 and len(srv.requests) == 3
