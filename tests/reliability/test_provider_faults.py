"""Provider faults (issue 5.1) through BOTH real SDKs and the loopback scripted server.

Each fault is a script entry that consumes one slot, followed by a normal turn, so a retry is
visible as the next slot being served. Retries go through `stream_with_retry` exactly as the loop
uses it; waits are recorded rather than slept (one test really sleeps a tiny retry-after).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from ctxagent.agent.providers.anthropic import AnthropicProvider
from ctxagent.agent.providers.openai import OpenAIProvider
from ctxagent.agent.providers.protocol import Provider, Stop, StreamEvent, TextDelta
from ctxagent.agent.retry import stream_with_retry
from ctxagent.context.errors import (
    AuthError,
    BadRequestError,
    ContextLengthError,
    ModelNotFoundError,
    ProviderError,
    ServerError,
    StreamError,
)
from ctxagent.context.request import Message, Request
from ctxagent.tui.lab.scripted.server import ScriptedServer

REQ = Request(system="You are a test.", messages=[Message("user", "fix it 修一下")], tools=[])
RECOVERED = {"text": "recovered answer 已恢复"}

PROVIDERS: dict[str, Callable[[str], Provider]] = {
    "anthropic": lambda url: AnthropicProvider("claude-haiku-4-5", api_key="sk-ant-test", base_url=url),
    "openai": lambda url: OpenAIProvider("gpt-5.4-mini", api_key="sk-test", base_url=url),
}


class Outcome:
    def __init__(self) -> None:
        self.events: list[StreamEvent] = []
        self.notices: list[str] = []
        self.sleeps: list[float] = []
        self.error: ProviderError | None = None
        self.requests = 0

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, TextDelta))


def drive(kind: str, script: list[dict], *, attempts: int = 4, sleep: Callable[[float], None] | None = None) -> Outcome:
    out = Outcome()
    with ScriptedServer(script) as srv:
        provider = PROVIDERS[kind](srv.base_url)
        record_sleep = sleep or out.sleeps.append
        try:
            for ev in stream_with_retry(lambda: provider.stream(REQ), attempts=attempts, base_delay=0.01,
                                        on_retry=out.notices.append, sleep=record_sleep):
                out.events.append(ev)
        except ProviderError as e:
            out.error = e
        out.requests = len(srv.requests)
    return out


both = pytest.mark.parametrize("kind", sorted(PROVIDERS))


@both
@pytest.mark.parametrize(("fault", "label"), [
    ({"fault": "429", "retry_after": 0.25}, "rate limited (429)"),
    ({"fault": "500"}, "server error (500)"),
    ({"fault": "529"}, "overloaded (529)"),
    ({"fault": "reset"}, "connection failed"),
    ({"fault": "malformed_sse"}, "connection failed"),  # broke before any event: safe to retry
])
def test_retryable_fault_then_recovery(kind: str, fault: dict, label: str) -> None:
    out = drive(kind, [fault, RECOVERED])
    assert out.error is None
    assert out.text == "recovered answer 已恢复" and out.events[-1] == Stop("end_turn")
    assert out.requests == 2
    assert len(out.notices) == 1 and out.notices[0].startswith(f"{label}; retrying in ")
    assert out.notices[0].endswith("attempt 2/4")
    if fault.get("retry_after") is not None:
        assert out.sleeps == [0.25]  # the server's retry-after, honoured exactly


@both
def test_retry_after_is_really_waited(kind: str) -> None:
    started = time.monotonic()
    out = drive(kind, [{"fault": "429", "retry_after": 0.05}, RECOVERED], sleep=time.sleep)
    assert out.error is None and out.text == "recovered answer 已恢复"
    assert time.monotonic() - started >= 0.05  # a lower bound only: never assert speed


@both
def test_persistent_server_errors_give_up_with_backoff(kind: str) -> None:
    out = drive(kind, [{"fault": "500"}] * 3 + [RECOVERED], attempts=3)
    assert isinstance(out.error, ServerError) and out.error.status == 500
    assert out.requests == 3 and len(out.notices) == 2
    assert out.sleeps[1] > out.sleeps[0] * 1.0 or out.sleeps[1] >= 0.01  # exponential, jittered
    assert all(0 < s <= 0.04 for s in out.sleeps)


@both
@pytest.mark.parametrize(("fault", "error", "needle"), [
    ({"fault": "401"}, AuthError, "_API_KEY"),
    ({"fault": "404"}, ModelNotFoundError, "model not found"),
    ({"fault": "context_length"}, ContextLengthError, "too long"),
])
def test_fatal_faults_fail_at_once_with_a_clear_class(kind: str, fault: dict, error: type, needle: str) -> None:
    out = drive(kind, [fault, RECOVERED])
    assert isinstance(out.error, error) and needle in str(out.error)
    assert out.requests == 1 and out.notices == [] and out.events == []


@both
@pytest.mark.parametrize("fault", [
    {"fault": "cut", "text": "partial answer, 一半的回答"},
    {"fault": "malformed_sse", "text": "partial answer, 一半的回答"},
])
def test_stream_broken_after_text_keeps_the_text_and_does_not_retry(kind: str, fault: dict) -> None:
    out = drive(kind, [fault, RECOVERED])
    assert isinstance(out.error, StreamError)
    assert out.text == "partial answer, 一半的回答"  # every delta that arrived reached the caller
    assert out.requests == 1 and out.notices == []  # a retry would duplicate the text


@both
def test_script_exhausted_is_a_clear_bad_request(kind: str) -> None:
    out = drive(kind, [])
    assert isinstance(out.error, BadRequestError) and "nothing left" in str(out.error)
    assert not isinstance(out.error, ContextLengthError)
