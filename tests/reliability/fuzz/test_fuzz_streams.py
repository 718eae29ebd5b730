"""Fuzzing the model's stream: SSE bodies of both wire formats — cut at any byte, lone surrogates,
huge deltas, deep nesting, interleaved pings, garbage lines — fed to the real SDKs through a
loopback server, under the real agent loop. Every turn ends, with a reply (maybe partial) or a
clear error; never an exception out of the loop, never a hang, and the log stays encodable."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from unittest import mock

import pytest
from ctxagent.agent import retry
from ctxagent.agent.config import Config
from ctxagent.agent.loop import Agent, AgentParts
from ctxagent.agent.providers.anthropic import AnthropicProvider
from ctxagent.agent.providers.openai import OpenAIProvider
from ctxagent.agent.session import open_session
from ctxagent.context.budget import Budget
from ctxagent.context.calibrator import Calibrator
from ctxagent.context.spill import SpillStore
from ctxagent.context.tokens import CachedCounter, get_counter
from ctxagent.tools import make_registry
from hypothesis import HealthCheck, given, settings, strategies as st
from strategies import DEPTHS, TEXT, deep_text

TURN_SECONDS = 60  # a turn that has not ended by then hangs
ENDINGS = {"end_turn", "max_tokens", "response_cap", "max_steps", "error", "stream_error", "tool_use"}


class _Body:
    """What the server answers every request with (the current example), and whether it drops the
    connection after it instead of ending the body."""

    data = b""
    drop = False


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        data = _Body.data
        for i in range(0, len(data), 65536):
            piece = data[i:i + 65536]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        if _Body.drop:
            self.close_connection = True
            self.wfile.flush()
            self.connection.shutdown(2)
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client hanging up mid-body


@pytest.fixture(scope="module")
def raw_server() -> Iterator[str]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def agents(raw_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Agent]]:
    made: dict[str, Agent] = {}
    for kind in ("anthropic", "openai"):
        repo = tmp_path_factory.mktemp(f"stream-{kind}")
        (repo / "app.py").write_text("x = 1\n")
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        provider = (AnthropicProvider("claude-haiku-4-5", api_key="sk-ant-fuzz", base_url=raw_server, idle_timeout=5)
                    if kind == "anthropic" else
                    OpenAIProvider("gpt-5.4-mini", api_key="sk-fuzz", base_url=raw_server, idle_timeout=5))
        label = f"{kind}:{provider.model}"
        session = open_session(repo, Config(model=label, permission_mode="yolo", max_steps=2, memory=False))
        parts = AgentParts(provider=provider, registry=make_registry(), counter=CachedCounter(get_counter("o200k_base")),
                           budget=Budget(200_000, max_output=1024), calibrator=Calibrator(label),
                           spill=SpillStore(repo / ".ctxagent" / "spill"), system="You are fuzzed.", model_label=label)
        made[kind] = Agent(session, parts, on_event=lambda ev: None)
    yield made
    for agent in made.values():
        agent.session.log.close()


# -- the bodies ------------------------------------------------------------------------------------

PIECE = st.one_of(TEXT, st.sampled_from(["\udce9", "\ud83d", "好", "x" * 300_000, "\u202e", "\x00"]))
ARGS = st.one_of(st.just('{"path": "app.py"}'), st.just(""), st.just("{"), st.just('{"path": 1}'),
                 DEPTHS.map(lambda d: '{"path": ' + deep_text(d) + "}"), TEXT)
GARBAGE = st.one_of(st.sampled_from([b"data: {", b"data: [DONE]", b"event: error", b": ping", b"data: null",
                                     b"event: message_stop\ndata: {}", b"data: " + deep_text(5_000).encode(),
                                     b'data: {"type": "content_block_delta", "index": 0, "delta": {}}',
                                     b'data: {"choices": [{"delta": {"tool_calls": [{"index": "x"}]}}]}']),
                    st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")))


def _sse(name: str | None, data: Any) -> bytes:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(data, ensure_ascii=True)}\n\n".encode()


def anthropic_body(pieces: list[str], args: str | None) -> list[bytes]:
    usage = {"input_tokens": 10, "output_tokens": 1}
    out = [_sse("message_start", {"type": "message_start", "message": {
        "id": "msg_f", "type": "message", "role": "assistant", "model": "m", "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": usage}}),
        _sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})]
    out += [_sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": p}}) for p in pieces]
    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    if args is not None:
        out.append(_sse("content_block_start", {"type": "content_block_start", "index": 1,
                                                "content_block": {"type": "tool_use", "id": "toolu_f", "name": "read_file",
                                                                  "input": {}}}))
        out += [_sse("content_block_delta", {"type": "content_block_delta", "index": 1,
                                             "delta": {"type": "input_json_delta", "partial_json": args[i:i + 7000]}})
                for i in range(0, max(1, len(args)), 7000)]
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 1}))
    out.append(_sse("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": "tool_use" if args is not None else "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 5}}))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return out


def openai_body(pieces: list[str], args: str | None) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(None, {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    out = [chunk({"role": "assistant", "content": ""})] + [chunk({"content": p}) for p in pieces]
    if args is not None:
        out.append(chunk({"tool_calls": [{"index": 0, "id": "call_f", "type": "function",
                                          "function": {"name": "read_file", "arguments": ""}}]}))
        out += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[i:i + 7000]}}]})
                for i in range(0, max(1, len(args)), 7000)]
    out.append(chunk({}, "tool_calls" if args is not None else "stop"))
    out.append(b"data: [DONE]\n\n")
    return out


PINGS = {"anthropic": _sse("ping", {"type": "ping"}), "openai": b": keep-alive\n\n"}


@st.composite
def bodies(draw: st.DrawFn, kind: str) -> tuple[bytes, bool]:
    pieces = draw(st.lists(PIECE, min_size=0, max_size=4))
    args = draw(st.one_of(st.none(), ARGS))
    events = (anthropic_body if kind == "anthropic" else openai_body)(pieces, args)
    for _ in range(draw(st.integers(0, 3))):  # interleaved keep-alives and garbage
        at = draw(st.integers(0, len(events)))
        extra = PINGS[kind] if draw(st.booleans()) else draw(GARBAGE) + b"\n\n"
        events.insert(at, extra)
    data = b"".join(events)
    cut = draw(st.one_of(st.none(), st.integers(0, len(data))))
    if cut is not None:
        return data[:cut], draw(st.booleans())
    return data, False


# -- the property ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@settings(max_examples=35, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                                  HealthCheck.data_too_large])
@given(data=st.data())
def test_any_stream_ends_the_turn_cleanly(agents: dict[str, Agent], kind: str, data: st.DataObject) -> None:
    _Body.data, _Body.drop = data.draw(bodies(kind), label="body")
    agent = agents[kind]
    outcome: dict[str, Any] = {}

    def turn() -> None:
        try:
            outcome["done"] = agent.run_turn("go 开始")
        except BaseException as exc:  # noqa: BLE001 - the property: nothing escapes the loop
            outcome["raised"] = exc

    with mock.patch.object(retry, "backoff_delay", lambda *a, **k: 0.0):  # retries at once: the same body again
        worker = threading.Thread(target=turn, daemon=True)
        worker.start()
        worker.join(TURN_SECONDS)
    assert not worker.is_alive(), "the turn hangs"
    assert "raised" not in outcome, f"the loop raised {outcome.get('raised')!r}"
    done = outcome["done"]
    assert done.stop_reason in ENDINGS, done
    if done.stop_reason == "error":
        assert done.error.strip(), "an error without a message"
    for ev in agent.session.log.events[-8:]:
        json.dumps(ev.data, ensure_ascii=False).encode("utf-8")  # the log stays encodable
