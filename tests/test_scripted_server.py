"""The loopback scripted model server and the in-process scripted model.

Real HTTP on 127.0.0.1, the real `anthropic` / `openai` SDKs, a real `ctxagent scripted-server`
subprocess; no mocks.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import anthropic
import openai
import pytest
from ctxagent.agent.providers.protocol import Stop, TextDelta
from ctxagent.agent.providers.registry import make_provider
from ctxagent.context.errors import (
    BadRequestError,
    ConfigError,
    RateLimitError,
    StreamError,
)
from ctxagent.context.request import Message, Request, ToolCall, ToolSpec, Usage
from ctxagent.tui.lab.scripted.provider import ScriptedProvider
from ctxagent.tui.lab.scripted.script import estimate_input_tokens, load_script
from ctxagent.tui.lab.scripted.server import ScriptedServer

TURNS = [
    {"text": "Reading the file. 先读文件。", "tool_calls": [{"name": "read_file", "arguments": {"path": "app.py"}}]},
    {"text": "Done: the bug is fixed. 完成。", "usage": {"input_tokens": 1234, "output_tokens": 56, "cache_read": 1000}},
]


def _post(url: str, body: object) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_anthropic_sdk_streams_text_and_tool_use() -> None:
    with ScriptedServer(TURNS) as srv:
        client = anthropic.Anthropic(api_key="test-key", base_url=srv.base_url, max_retries=0)
        with client.messages.stream(model="claude-x", max_tokens=100,
                                    messages=[{"role": "user", "content": "fix it"}]) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
        assert text == "Reading the file. 先读文件。"
        tool = [b for b in final.content if b.type == "tool_use"][0]
        assert (tool.id, tool.name, tool.input) == ("toolu_scripted_0001_0", "read_file", {"path": "app.py"})
        assert final.stop_reason == "tool_use"
        # Without "usage" in the script the input count is derived from the request body.
        assert final.usage.input_tokens == estimate_input_tokens(srv.requests[0]["body"])


def test_anthropic_sdk_json_mode_and_scripted_usage() -> None:
    with ScriptedServer(TURNS) as srv:
        client = anthropic.Anthropic(api_key="test-key", base_url=srv.base_url, max_retries=0)
        client.messages.create(model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "a"}])
        msg = client.messages.create(model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "b"}])
        assert msg.content[0].text == "Done: the bug is fixed. 完成。"
        assert msg.stop_reason == "end_turn"
        assert (msg.usage.input_tokens, msg.usage.output_tokens, msg.usage.cache_read_input_tokens) == (1234, 56, 1000)


def test_openai_sdk_streams_text_tool_calls_and_usage() -> None:
    with ScriptedServer(TURNS) as srv:
        client = openai.OpenAI(api_key="test-key", base_url=srv.base_url + "/v1", max_retries=0)
        chunks = list(client.chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": "fix it"}], stream=True,
            stream_options={"include_usage": True}))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "Reading the file. 先读文件。"
        calls = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
        assert calls[0].id == "call_scripted_0001_0" and calls[0].function.name == "read_file"
        assert json.loads("".join(tc.function.arguments or "" for tc in calls)) == {"path": "app.py"}
        assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["tool_calls"]
        assert chunks[-1].choices == [] and chunks[-1].usage.prompt_tokens > 0


def test_openai_sdk_json_mode_and_no_usage_chunk_without_include_usage() -> None:
    with ScriptedServer(TURNS) as srv:
        client = openai.OpenAI(api_key="test-key", base_url=srv.base_url + "/v1", max_retries=0)
        chunks = list(client.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "a"}],
                                                     stream=True))
        assert all(c.usage is None for c in chunks)
        done = client.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "b"}])
        assert done.choices[0].message.content == "Done: the bug is fixed. 完成。"
        assert done.choices[0].finish_reason == "stop"
        # prompt_tokens is the whole prompt: uncached input plus the cached part.
        assert done.usage.prompt_tokens == 2234 and done.usage.prompt_tokens_details.cached_tokens == 1000


def test_past_the_end_is_a_clear_400_in_each_shape() -> None:
    with ScriptedServer([]) as srv:
        status, body = _post(srv.base_url + "/v1/messages", {"model": "m", "messages": []})
        assert status == 400 and body["type"] == "error"
        assert body["error"]["type"] == "invalid_request_error" and "nothing left" in body["error"]["message"]
        status, body = _post(srv.base_url + "/v1/chat/completions", {"model": "m", "messages": []})
        assert status == 400 and "nothing left" in body["error"]["message"]
        status, body = _post(srv.base_url + "/v1/nope", {})
        assert status == 404


def test_requests_are_recorded_as_received(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    with ScriptedServer(TURNS, record=record) as srv:
        _post(srv.base_url + "/v1/messages", {"model": "m", "messages": [{"role": "user", "content": "你好"}]})
        _post(srv.base_url + "/v1/chat/completions", {"model": "m", "messages": [], "stream": False})
    lines = [json.loads(x) for x in record.read_text(encoding="utf-8").splitlines()]
    assert [x["path"] for x in lines] == ["/v1/messages", "/v1/chat/completions"]
    assert lines[0]["body"]["messages"][0]["content"] == "你好"
    assert set(lines[0]) == {"path", "body"}  # nothing else: no headers, so no keys on disk


def test_script_validation_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown fault"):
        load_script([{"fault": "explode"}])
    with pytest.raises(ConfigError, match="name"):
        load_script([{"tool_calls": [{"arguments": {}}]}])
    with pytest.raises(ConfigError, match="not found"):
        load_script(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("[{", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_script(bad)
    assert len(load_script({"turns": [{}, {"text": "x"}]})) == 2


def test_cli_subprocess_prints_address_first_and_records(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(TURNS, ensure_ascii=False), encoding="utf-8")
    record = tmp_path / "rec.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxagent.tui.cli", "scripted-server", str(script), "--port", "0",
         "--record", str(record)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline().strip() if proc.stdout else ""
        assert first.startswith("listening on http://127.0.0.1:"), first
        base_url = first.removeprefix("listening on ")
        client = anthropic.Anthropic(api_key="test-key", base_url=base_url, max_retries=0)
        with client.messages.stream(model="claude-x", max_tokens=10,
                                    messages=[{"role": "user", "content": "hi"}]) as s:
            assert "".join(s.text_stream).startswith("Reading")
        assert json.loads(record.read_text(encoding="utf-8").splitlines()[0])["body"]["model"] == "claude-x"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err


def test_cli_reports_a_bad_script(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "ctxagent.tui.lab.scripted", str(tmp_path / "x.json")],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "script not found" in done.stderr


# ------------------------------------------------------------------ the in-process scripted model

REQ = Request(system="be brief", messages=[Message("user", "hi 你好")],
              tools=[ToolSpec("read_file", "read a file", {"type": "object"})])


def test_scripted_provider_yields_the_script_deterministically(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(TURNS), encoding="utf-8")
    provider = make_provider(f"scripted:{path}")
    assert isinstance(provider, ScriptedProvider) and provider.name == "scripted"
    first = list(provider.stream(REQ))
    assert "".join(e.text for e in first if isinstance(e, TextDelta)) == "Reading the file. 先读文件。"
    call = [e for e in first if isinstance(e, ToolCall)][0]
    assert (call.id, call.name, call.arguments) == ("call_scripted_0001_0", "read_file", {"path": "app.py"})
    usage = [e for e in first if isinstance(e, Usage)][0]
    assert usage.input_tokens == estimate_input_tokens(provider.body(REQ))
    assert first[-1] == Stop("tool_use")
    second = list(provider.stream(REQ))
    assert [e for e in second if isinstance(e, Usage)][0] == Usage(1234, 56, 1000, 0)
    with pytest.raises(BadRequestError, match="nothing left"):
        list(provider.stream(REQ))
    # A fresh provider over the same script gives the same events.
    assert list(ScriptedProvider(path).stream(REQ)) == first


def test_scripted_provider_faults_and_partial_text() -> None:
    provider = ScriptedProvider([{"fault": "429", "retry_after": 0.25}, {"fault": "cut", "text": "half an ans"},
                                 {"tool_calls": [{"name": "grep", "raw_arguments": "{not json"}]}])
    with pytest.raises(RateLimitError) as err:
        list(provider.stream(REQ))
    assert err.value.retry_after == 0.25
    got: list[object] = []
    with pytest.raises(StreamError):
        for ev in provider.stream(REQ):
            got.append(ev)
    assert "".join(e.text for e in got if isinstance(e, TextDelta)) == "half an ans"
    call = [e for e in provider.stream(REQ) if isinstance(e, ToolCall)][0]
    assert call.malformed and call.raw_arguments == "{not json"
