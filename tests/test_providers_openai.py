"""OpenAIProvider: neutral → Chat Completions wire format, streaming through the real SDK on loopback."""

from __future__ import annotations

import json

import pytest
from ctxagent.agent.providers.openai import OpenAIProvider, normalize_base_url, wire_messages
from ctxagent.agent.providers.protocol import Stop, TextDelta
from ctxagent.agent.providers.registry import make_provider
from ctxagent.agent.providers.specs import Credentials
from ctxagent.context.errors import AuthError, ConfigError, ModelNotFoundError
from ctxagent.context.request import Message, Request, ToolCall, ToolSpec, Usage
from ctxagent.tui.lab.scripted.server import ScriptedServer

TOOLS = [ToolSpec("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})]


def conversation() -> list[Message]:
    return [
        Message("user", "Fix the login bug. 修复登录问题。"),
        Message("assistant", "", tool_calls=[ToolCall("c1", "read_file", {"path": "登录.py"}),
                                             ToolCall("c2", "read_file", {"path": "b.py"})]),
        Message("tool", "print('hi')", tool_call_id="c1", name="read_file"),
        Message("user", "Decisions so far: use PostgreSQL.", kind="warm"),
        Message("tool", "no such file", tool_call_id="c2", name="read_file", is_error=True),
        Message("user", "continue"),
    ]


@pytest.mark.parametrize(("given", "expected"), [
    (None, "https://api.openai.com/v1"),
    ("http://127.0.0.1:11434", "http://127.0.0.1:11434/v1"),
    ("http://127.0.0.1:11434/", "http://127.0.0.1:11434/v1"),
    ("http://localhost:8000/v1", "http://localhost:8000/v1"),
    ("https://openrouter.ai/api/v1/", "https://openrouter.ai/api/v1"),
])
def test_base_url_without_a_path_gets_v1(given: str | None, expected: str) -> None:
    assert normalize_base_url(given) == expected


def test_wire_messages_system_first_tools_after_their_call_then_user_text() -> None:
    wire = wire_messages("You are ctxagent.", conversation())
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert wire[0] == {"role": "system", "content": "You are ctxagent."}
    assert wire[2]["content"] is None
    assert wire[2]["tool_calls"][0] == {"id": "c1", "type": "function",
                                        "function": {"name": "read_file", "arguments": '{"path": "登录.py"}'}}
    assert wire[3] == {"role": "tool", "tool_call_id": "c1", "content": "print('hi')"}
    assert wire[4]["tool_call_id"] == "c2" and wire[4]["content"].startswith("[tool error]")
    # The warm block and the user's text follow the tool results, merged into one user message.
    assert wire[5] == {"role": "user", "content": "Decisions so far: use PostgreSQL.\n\ncontinue"}


def test_body_uses_max_completion_tokens_for_openai_and_max_tokens_for_local_servers() -> None:
    req = Request(system="s", messages=[Message("user", "hi")], tools=TOOLS, max_tokens=5000)
    official = OpenAIProvider("gpt-5.4-mini", api_key="k").body(req)
    assert official["max_completion_tokens"] == 5000 and "max_tokens" not in official
    assert official["stream"] is True and official["stream_options"] == {"include_usage": True}
    assert official["tools"] == [{"type": "function", "function": {
        "name": "read_file", "description": "Read a file", "parameters": TOOLS[0].input_schema}}]
    local = OpenAIProvider("qwen2.5-coder:7b", api_key="k", base_url="http://127.0.0.1:1", max_tokens=1000).body(req)
    assert local["max_tokens"] == 1000 and "max_completion_tokens" not in local


def test_streams_text_tool_calls_and_cached_usage() -> None:
    script = [{"text": "读取文件 and grep.", "tool_calls": [
        {"name": "read_file", "arguments": {"path": "a.py"}},
        {"name": "grep", "arguments": {"pattern": "def login", "ignore_case": True}}],
        "usage": {"input_tokens": 300, "output_tokens": 40, "cache_read": 700}}]
    req = Request(system="sys", messages=conversation(), tools=TOOLS)
    with ScriptedServer(script) as srv:
        p = OpenAIProvider("gpt-5.4-mini", api_key="sk-test", base_url=srv.base_url)
        events = list(p.stream(req))
        sent = srv.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["body"] == p.body(req)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "读取文件 and grep."
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_scripted_0001_0", "read_file", {"path": "a.py"}),
        ("call_scripted_0001_1", "grep", {"pattern": "def login", "ignore_case": True})]
    usage = [e for e in events if isinstance(e, Usage)][0]
    # prompt_tokens (1000) stays the whole prompt: 300 uncached + 700 read from the cache.
    assert usage == Usage(input_tokens=300, output_tokens=40, cache_read=700) and usage.prompt_tokens == 1000
    assert events[-1] == Stop("tool_use")


def test_invalid_tool_json_keeps_the_raw_arguments() -> None:
    script = [{"tool_calls": [{"name": "grep", "raw_arguments": "{'pattern': 1}"}]}]
    with ScriptedServer(script) as srv:
        p = OpenAIProvider("gpt-x", api_key="k", base_url=srv.base_url)
        calls = [e for e in p.stream(Request("", [Message("user", "go")], TOOLS)) if isinstance(e, ToolCall)]
    assert calls == [ToolCall("call_scripted_0001_0", "grep", {"_raw": "{'pattern': 1}"})]


def test_non_streaming_mode_gives_the_same_events() -> None:
    script = [{"text": "hello 你好", "tool_calls": [{"id": "call_1", "name": "read_file", "arguments": {"path": "x"}}],
               "usage": {"input_tokens": 10, "output_tokens": 5}}] * 2
    req = Request("sys", [Message("user", "go")], TOOLS)
    with ScriptedServer(script) as srv:
        streamed = list(OpenAIProvider("gpt-x", api_key="k", base_url=srv.base_url).stream(req))
        plain = OpenAIProvider("gpt-x", api_key="k", base_url=srv.base_url, streaming=False)
        whole = list(plain.stream(req))
        assert srv.requests[1]["body"]["stream"] is False and "stream_options" not in srv.requests[1]["body"]
    assert [e for e in whole if not isinstance(e, TextDelta)] == [e for e in streamed if not isinstance(e, TextDelta)]
    assert "".join(e.text for e in whole if isinstance(e, TextDelta)) == "hello 你好"


def test_errors_map_and_never_echo_the_key() -> None:
    with ScriptedServer([{"fault": "401"}, {"fault": "404"}]) as srv:
        p = OpenAIProvider("gpt-nope", api_key="sk-proj-SECRET", base_url=srv.base_url)
        req = Request("", [Message("user", "go")], [])
        with pytest.raises(AuthError) as auth:
            list(p.stream(req))
        assert "OPENAI_API_KEY" in str(auth.value) and "SECRET" not in str(auth.value)
        with pytest.raises(ModelNotFoundError, match="gpt-nope"):
            list(p.stream(req))


def test_make_provider_allows_no_key_with_a_custom_base_url() -> None:
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY"):
        make_provider("openai:gpt-5.4-mini")
    with ScriptedServer([{"text": "local model says hi"}]) as srv:
        p = make_provider("openai:qwen2.5-coder:7b", Credentials("openai", srv.base_url))
        assert isinstance(p, OpenAIProvider) and p.model == "qwen2.5-coder:7b"
        text = "".join(e.text for e in p.stream(Request("", [Message("user", "x")], [])) if isinstance(e, TextDelta))
        assert text == "local model says hi"
        assert json.dumps(srv.requests[0]["body"])  # recorded as plain JSON


def test_cancel_mid_stream_stops_with_cancelled_and_no_half_calls() -> None:
    import threading

    cancel = threading.Event()
    script = [{"text": "y" * 100, "tool_calls": [{"name": "read_file", "arguments": {"path": "a"}}]}]
    with ScriptedServer(script) as srv:
        p = OpenAIProvider("gpt-x", api_key="k", base_url=srv.base_url)
        got = []
        for ev in p.stream(Request("", [Message("user", "go")], TOOLS), cancel=cancel):
            got.append(ev)
            cancel.set()
    assert got[-1] == Stop("cancelled") and not [e for e in got if isinstance(e, ToolCall)]
