"""`ctxagent -p`: what reaches stdout and stderr, how a cut reply and a too-long first prompt end,
errors said once, control sequences never printed, and the size cap on one model response."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ctxagent.agent.providers import response_cap
from ctxagent.tui.cli.main import main
from ctxagent.tui.lab.scripted.server import ScriptedServer

MODELS = ["anthropic:claude-sonnet-5-5", "openai:gpt-5.4-mini"]


@pytest.mark.parametrize("model", MODELS)
def test_a_max_tokens_stop_is_reported_as_such(repo: Path, scripted_server, ctxagent_run, model: str) -> None:
    srv = scripted_server([{"text": "The answer begins and then", "stop_reason": "max_tokens"}] * 2)
    text = ctxagent_run(repo, "-p", "explain", "--model", model, "--base-url", srv.url)
    assert text.returncode == 7, text.stderr
    assert text.stdout == "The answer begins and then\n"  # what arrived is the answer, on stdout
    assert text.stderr.count("the reply was cut: the model reached its output limit (max_tokens)") == 1
    js = ctxagent_run(repo, "-p", "explain", "--model", model, "--base-url", srv.url, "--output", "json")
    assert js.returncode == 7
    result = json.loads(js.stdout)
    assert result["stop_reason"] == "max_tokens" and result["result"] == "The answer begins and then"


@pytest.mark.parametrize("model", MODELS)
def test_context_length_on_the_first_turn_exits_4(repo: Path, scripted_server, ctxagent_run, model: str) -> None:
    srv = scripted_server([{"fault": "context_length"}])
    out = ctxagent_run(repo, "-p", "hi", "--model", model, "--base-url", srv.url, "--output", "json")
    assert out.returncode == 4, out.stderr
    assert json.loads(out.stdout)["error"]["type"] == "ContextLengthError"


def test_each_error_is_printed_once(repo: Path, scripted_server, ctxagent_run) -> None:
    srv = scripted_server([{"fault": "401"}])
    out = ctxagent_run(repo, "-p", "hi", "--model", "anthropic:claude-sonnet-5-5", "--base-url", srv.url)
    assert out.returncode == 3 and out.stdout == ""
    lines = [ln for ln in out.stderr.splitlines() if "authentication failed" in ln or "ANTHROPIC_API_KEY" in ln]
    assert len(lines) == 1, out.stderr


def test_control_sequences_never_reach_the_terminal(repo: Path, scripted_server, ctxagent_run) -> None:
    hostile = "Done\x1b]0;pwned title\x07 \x1b[31mred\x1b[0m \x9b2J \x1b]52;c;ZWNobyBoaQ==\x07end"
    srv = scripted_server([
        {"text": "look\x1b[2J", "tool_calls": [{"name": "read_file", "arguments": {"path": "calc\x1b[8m.py"}}]},
        {"text": hostile},
        {"text": hostile},
    ])
    out = ctxagent_run(repo, "-p", "hi", "--model", "openai:gpt-5.4-mini", "--base-url", srv.url)
    assert out.returncode == 0, out.stderr
    for stream in (out.stdout, out.stderr):
        assert "\x1b" not in stream and "\x9b" not in stream and "\x07" not in stream
    assert out.stdout == "Done red  end\n"  # whole sequences removed (the 8-bit CSI too), text kept
    js = ctxagent_run(repo, "-p", "hi", "--continue", "--model", "openai:gpt-5.4-mini", "--base-url", srv.url, "--output", "json")
    assert "\x1b" not in js.stdout and "\x9b" not in js.stdout and "\\u009b" in js.stdout
    assert json.loads(js.stdout)["result"] == hostile  # JSON keeps the data, escaped


@pytest.mark.parametrize("model", MODELS)
def test_a_response_over_the_size_cap_is_cut_kept_and_marked(
    repo: Path, model: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(response_cap, "MAX_RESPONSE_CHARS", 1000)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000000000000")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000000000")
    with ScriptedServer([{"text": "x" * 50_000}]) as srv:
        code = main(["-p", "talk", "--model", model, "--base-url", srv.base_url, "--output", "json", "--cwd", str(repo)])
    out = capsys.readouterr()
    assert code == 7, out.err
    result = json.loads(out.out)
    assert result["stop_reason"] == "response_cap"
    assert result["result"].startswith("x" * 1000) and "x" * 1001 not in result["result"]
    assert result["result"].endswith("[response cut by ctxagent: it passed 1,000 characters; the rest was not read]")
    assert out.err.count("the reply passed ctxagent's size cap") == 1
    events = [json.loads(line) for line in (repo / ".ctxagent" / "sessions" / f"{result['session']}.jsonl").read_text().splitlines()]
    last = [e for e in events if e["kind"] == "assistant"][-1]["data"]
    assert last["stop_reason"] == "response_cap" and "response cut by ctxagent" in last["text"]  # kept and marked


@pytest.mark.parametrize("model", MODELS)
def test_a_body_over_the_byte_cap_is_cut_before_it_is_buffered(
    repo: Path, model: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(response_cap, "MAX_RESPONSE_BYTES", 20_000)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000000000000")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000000000")
    with ScriptedServer([{"text": "y" * 50_000}]) as srv:
        code = main(["-p", "talk", "--model", model, "--base-url", srv.base_url, "--output", "json", "--cwd", str(repo)])
    result = json.loads(capsys.readouterr().out)
    assert code == 7 and result["stop_reason"] == "response_cap"
    kept = result["result"].split("\n\n[response cut")[0]
    assert 0 < len(kept) < 20_000 and set(kept) == {"y"}
    assert result["result"].endswith("it passed 20,000 bytes; the rest was not read]")
