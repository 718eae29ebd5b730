"""AnthropicProvider: neutral → Messages wire format, and streaming through the real SDK on loopback."""

from __future__ import annotations

import threading

import pytest
from ctxagent.agent.providers.anthropic import AnthropicProvider, wire_messages
from ctxagent.agent.providers.protocol import Stop, TextDelta
from ctxagent.agent.providers.registry import make_provider
from ctxagent.agent.providers.specs import Credentials
from ctxagent.context.errors import AuthError, ContextLengthError
from ctxagent.context.request import Message, Request, ToolCall, ToolSpec, Usage
from ctxagent.tui.lab.scripted.server import ScriptedServer

TOOLS = [
    ToolSpec("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSpec("grep", "Search", {"type": "object", "properties": {"pattern": {"type": "string"}}}),
]


def conversation() -> list[Message]:
    return [
        Message("user", "Fix the login bug. 修复登录问题。"),
        Message("assistant", "Let me look.", tool_calls=[ToolCall("t1", "read_file", {"path": "auth.py"}),
                                                         ToolCall("t2", "grep", {"pattern": "login"})]),
        Message("tool", "def login(): ...", tool_call_id="t1", name="read_file"),
        Message("user", "Constraints: never use MySQL.", kind="warm"),
        Message("tool", "no matches", tool_call_id="t2", name="grep", is_error=True),
    ]


def test_body_has_cache_control_on_the_stable_prefix() -> None:
    p = AnthropicProvider("claude-sonnet-5-5", api_key="k", max_tokens=4000)
    body = p.body(Request(system="You are ctxagent.", messages=conversation(), tools=TOOLS, max_tokens=8192))
    assert list(body) == ["model", "max_tokens", "system", "messages", "tools", "stream"]
    assert body["model"] == "claude-sonnet-5-5" and body["max_tokens"] == 4000 and body["stream"] is True
    assert body["system"] == [{"type": "text", "text": "You are ctxagent.", "cache_control": {"type": "ephemeral"}}]
    # the API caches the tools, then the system: the system block's breakpoint covers both
    assert all("cache_control" not in t for t in body["tools"])
    assert body["tools"][0]["input_schema"] == TOOLS[0].input_schema
    # without a system prompt, the last tool schema takes the stable prefix's breakpoint
    bare = p.body(Request(system="", messages=conversation(), tools=TOOLS))
    assert "system" not in bare and "cache_control" not in bare["tools"][0]
    assert bare["tools"][1]["cache_control"] == {"type": "ephemeral"}
    # the end of the history is cached too: the last tool result, just before the per-step warm block
    last_user = body["messages"][-1]["content"]
    assert last_user[1] == {"type": "tool_result", "tool_use_id": "t2", "content": "no matches", "is_error": True,
                            "cache_control": {"type": "ephemeral"}}
    assert "cache_control" not in last_user[2] and sum("cache_control" in b for m in body["messages"] for b in m["content"]) == 1


def test_the_history_breakpoint_skips_a_warm_block_before_the_newest_user_message() -> None:
    p = AnthropicProvider("claude-sonnet-5-5", api_key="k")
    msgs = [Message("user", "hi"), Message("assistant", "hello"), Message("user", "pins", kind="warm"), Message("user", "next")]
    body = p.body(Request(system="s", messages=msgs, tools=TOOLS))
    assert body["messages"][1]["content"][0]["cache_control"] == {"type": "ephemeral"}  # "hello", the history's end
    assert all("cache_control" not in b for b in body["messages"][2]["content"])


def test_the_part_already_cut_gets_the_fourth_breakpoint() -> None:
    p = AnthropicProvider("claude-sonnet-5-5", api_key="k")
    msgs = [*conversation()[:3], Message("assistant", "Now the grep."), Message("user", "go on"),
            Message("assistant", "Done.")]
    body = p.body(Request(system="s", messages=msgs, tools=TOOLS, stable_messages=3))
    marked = [(wi, bi) for wi, m in enumerate(body["messages"]) for bi, b in enumerate(m["content"]) if "cache_control" in b]
    # the wire message holding the 3rd neutral message (the cut read_file result), and the history's end
    assert marked == [(2, 0), (5, 0)] and body["messages"][2]["content"][0]["tool_use_id"] == "t1"
    assert Request("s", msgs, TOOLS, stable_messages=3).to_dict()["stable_messages"] == 3
    assert "stable_messages" not in Request("s", msgs, TOOLS).to_dict()  # older logs' requests hash as before
    # ... and where the cut part ended at the previous cut: with the system's, four breakpoints, the API's maximum
    anchored = p.body(Request(system="s", messages=msgs, tools=TOOLS, stable_messages=3, anchor_messages=1))
    marked = [(wi, bi) for wi, m in enumerate(anchored["messages"]) for bi, b in enumerate(m["content"]) if "cache_control" in b]
    assert marked == [(0, 0), (2, 0), (5, 0)]
    assert sum("cache_control" in t for t in anchored["tools"]) + len(marked) + len(anchored["system"]) == 4
    assert Request("s", msgs, TOOLS, stable_messages=3, anchor_messages=1).to_dict()["anchor_messages"] == 1
    assert "anchor_messages" not in Request("s", msgs, TOOLS, stable_messages=3).to_dict()


def test_the_cut_part_is_not_marked_in_the_wire_message_of_the_working_memory_block() -> None:
    p = AnthropicProvider("claude-sonnet-5-5", api_key="k")
    # everything before the warm block is cut: its wire message also holds the warm block, whose end changes
    # every step; the history's end (the block before it) marks there instead
    body = p.body(Request(system="s", messages=conversation(), tools=TOOLS, stable_messages=3))
    marked = [(wi, bi) for wi, m in enumerate(body["messages"]) for bi, b in enumerate(m["content"]) if "cache_control" in b]
    assert marked == [(2, 1)] and body["messages"][2]["content"][2]["text"] == "Constraints: never use MySQL."


def test_tool_results_and_injected_blocks_merge_into_one_user_message() -> None:
    wire = wire_messages(conversation())
    assert [m["role"] for m in wire] == ["user", "assistant", "user"]
    assert wire[1]["content"] == [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "auth.py"}},
        {"type": "tool_use", "id": "t2", "name": "grep", "input": {"pattern": "login"}},
    ]
    assert wire[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "def login(): ..."},
        {"type": "tool_result", "tool_use_id": "t2", "content": "no matches", "is_error": True},
        {"type": "text", "text": "Constraints: never use MySQL."},
    ]


def test_empty_assistant_turns_are_dropped_and_neighbours_merge() -> None:
    wire = wire_messages([Message("user", "a"), Message("assistant", ""), Message("user", "b"),
                          Message("assistant", "ok")])
    assert wire == [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                    {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]


def test_streams_text_tool_calls_usage_and_sends_exactly_body() -> None:
    script = [{"text": "I'll read it. 我来读。", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}],
               "usage": {"input_tokens": 50, "output_tokens": 20, "cache_read": 900, "cache_write": 100}}]
    req = Request(system="sys", messages=conversation(), tools=TOOLS)
    with ScriptedServer(script) as srv:
        p = AnthropicProvider("claude-haiku-4-5", api_key="sk-ant-test", base_url=srv.base_url)
        events = list(p.stream(req))
        sent = srv.requests[0]
    assert sent["path"] == "/v1/messages"
    assert sent["body"] == p.body(req)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "I'll read it. 我来读。"
    assert [e for e in events if isinstance(e, ToolCall)] == [
        ToolCall("toolu_scripted_0001_0", "read_file", {"path": "a.py"})]
    usage = [e for e in events if isinstance(e, Usage)][0]
    assert usage == Usage(input_tokens=50, output_tokens=20, cache_read=900, cache_write=100)
    assert usage.prompt_tokens == 1050
    assert events[-1] == Stop("tool_use")


def test_invalid_tool_json_keeps_the_raw_arguments() -> None:
    script = [{"tool_calls": [{"name": "grep", "raw_arguments": '{"pattern": "x"'},
                              {"name": "grep", "raw_arguments": "[1, 2]"},
                              {"name": "git_status", "raw_arguments": ""}]}]
    with ScriptedServer(script) as srv:
        p = AnthropicProvider("claude-x", api_key="k", base_url=srv.base_url)
        calls = [e for e in p.stream(Request("", [Message("user", "go")], TOOLS)) if isinstance(e, ToolCall)]
    assert calls[0].malformed and calls[0].raw_arguments == '{"pattern": "x"'
    assert calls[1].malformed  # valid JSON, but not an object
    assert calls[2].arguments == {}


def test_non_streaming_mode_gives_the_same_events() -> None:
    script = [{"text": "hello 你好", "tool_calls": [{"name": "grep", "arguments": {"pattern": "a"}}]}] * 2
    req = Request("sys", [Message("user", "go")], TOOLS)
    with ScriptedServer(script) as srv:
        streamed = list(AnthropicProvider("claude-x", api_key="k", base_url=srv.base_url).stream(req))
        plain = AnthropicProvider("claude-x", api_key="k", base_url=srv.base_url, streaming=False)
        assert plain.body(req)["stream"] is False
        whole = list(plain.stream(req))
        assert srv.requests[1]["body"]["stream"] is False
    text = lambda evs: "".join(e.text for e in evs if isinstance(e, TextDelta))  # noqa: E731
    assert text(whole) == text(streamed) == "hello 你好"
    strip = lambda evs: [e for e in evs if not isinstance(e, (TextDelta, Usage))]  # noqa: E731
    assert [e.name for e in strip(whole) if isinstance(e, ToolCall)] == ["grep"]
    assert strip(whole)[-1] == Stop("tool_use")


def test_cancel_mid_stream_stops_with_cancelled() -> None:
    cancel = threading.Event()
    with ScriptedServer([{"text": "x" * 200}]) as srv:
        p = AnthropicProvider("claude-x", api_key="k", base_url=srv.base_url)
        got = []
        for ev in p.stream(Request("", [Message("user", "go")], []), cancel=cancel):
            got.append(ev)
            cancel.set()
    assert isinstance(got[0], TextDelta) and got[-1] == Stop("cancelled")
    assert len([e for e in got if isinstance(e, TextDelta)]) == 1


def test_errors_map_to_the_ctxagent_tree() -> None:
    with ScriptedServer([{"fault": "401"}, {"fault": "context_length"}]) as srv:
        p = AnthropicProvider("claude-x", api_key="sk-ant-secret-123", base_url=srv.base_url)
        req = Request("", [Message("user", "go")], [])
        with pytest.raises(AuthError) as auth:
            list(p.stream(req))
        assert "ANTHROPIC_API_KEY" in str(auth.value) and "sk-ant-secret-123" not in str(auth.value)
        with pytest.raises(ContextLengthError, match="prompt is too long"):
            list(p.stream(req))


def test_make_provider_builds_it_and_needs_a_key_off_loopback() -> None:
    with ScriptedServer([{"text": "hi"}]) as srv:
        p = make_provider("anthropic:claude-haiku-4-5", Credentials("anthropic", srv.base_url), max_tokens=100)
        assert isinstance(p, AnthropicProvider) and p.model == "claude-haiku-4-5"
        assert [e for e in p.stream(Request("", [Message("user", "x")], [])) if isinstance(e, TextDelta)]


def test_whitespace_only_text_never_becomes_a_text_block() -> None:
    from ctxagent.agent.providers.anthropic import wire_messages
    from ctxagent.context.request import Message, ToolCall

    wire = wire_messages([
        Message("user", "fix it"),
        Message("assistant", "\n\n", tool_calls=[ToolCall("t1", "read_file", {"path": "a.py"})]),
        Message("tool", "content", tool_call_id="t1", name="read_file"),
        Message("user", "  \n", kind="warm"),
    ])
    blocks = [b for m in wire for b in (m["content"] if isinstance(m["content"], list) else [])]
    assert all(b.get("text", "x").strip() for b in blocks if b["type"] == "text")
    assert [m["role"] for m in wire] == ["user", "assistant", "user"]
