"""Whole sessions through the real console script, the real SDKs and the real scripted server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

FIX_SCRIPT: list[dict[str, Any]] = [
    {"text": "Let me read the code.", "tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
    {"text": "The operator is wrong.", "tool_calls": [{"name": "edit_file", "arguments": {"path": "calc.py", "old_text": "return a - b", "new_text": "return a + b"}}]},
    {"tool_calls": [{"name": "run_tests", "arguments": {}}]},
    {"text": "Fixed `add`: it subtracted instead of adding. Tests pass."},
]


def _tool_result_ids_anthropic(body: dict[str, Any]) -> list[str]:
    ids = []
    for m in body["messages"]:
        if m["role"] == "user" and isinstance(m["content"], list):
            ids += [b["tool_use_id"] for b in m["content"] if b.get("type") == "tool_result"]
    return ids


def _tool_use_ids_anthropic(body: dict[str, Any]) -> list[str]:
    ids = []
    for m in body["messages"]:
        if m["role"] == "assistant" and isinstance(m["content"], list):
            ids += [b["id"] for b in m["content"] if b.get("type") == "tool_use"]
    return ids


@pytest.mark.parametrize("model", ["anthropic:claude-sonnet-5-5", "openai:gpt-5.4-mini"])
def test_read_edit_test_session(repo: Path, scripted_server, ctxagent_run, read_session, model: str) -> None:
    srv = scripted_server(FIX_SCRIPT)
    out = ctxagent_run(repo, "-p", "fix add()", "--model", model, "--base-url", srv.url, "--yes", "--output", "json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["stop_reason"] == "end_turn"
    assert result["steps"] == 4 and result["tool_calls"] == 3
    assert "Tests pass" in result["result"]
    assert result["context"]["step"] == 4 and result["context"]["window"] > 0
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"

    reqs = srv.requests()
    assert len(reqs) == 4
    last = reqs[-1]["body"]
    if model.startswith("anthropic"):
        assert reqs[0]["path"] == "/v1/messages"
        system = json.dumps(last["system"])
        assert _tool_result_ids_anthropic(last) == _tool_use_ids_anthropic(last) and len(_tool_use_ids_anthropic(last)) == 3
    else:
        assert reqs[0]["path"] == "/v1/chat/completions"
        system = last["messages"][0]["content"]
        calls = [c["id"] for m in last["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        answers = [m["tool_call_id"] for m in last["messages"] if m["role"] == "tool"]
        assert calls == answers and len(calls) == 3
    assert "BLUEHERON" in system  # AGENTS.md reached the system prompt
    assert last["stream"] is True

    events = read_session(repo, result["session"])
    kinds = [e["kind"] for e in events]
    for kind in ("session_start", "system_prompt", "user", "context_report", "assistant", "tool_result"):
        assert kind in kinds, kind
    assert kinds.count("context_report") == 4 and kinds.count("assistant") == 4
    test_result = next(e for e in events if e["kind"] == "tool_result" and e["data"]["name"] == "run_tests")
    assert test_result["data"]["content"].startswith("tests: 1 passed")

    # inspect rebuilds each step's request from the log alone, identical to what the server received
    for step in (1, 4):
        ins = ctxagent_run(repo, "inspect", result["session"], "--step", str(step), "--json")
        assert ins.returncode == 0, ins.stdout + ins.stderr
        assert json.loads(ins.stdout)["request"] == reqs[step - 1]["body"]


def test_text_output_and_continue(repo: Path, scripted_server, ctxagent_run) -> None:
    srv = scripted_server([
        {"text": "Looking.", "tool_calls": [{"name": "list_files", "arguments": {}}]},
        {"text": "There are two Python files."},
        {"text": "You asked about files before; still two."},
    ])
    out = ctxagent_run(repo, "-p", "what files are here?", "--model", "anthropic:claude-sonnet-5-5", "--base-url", srv.url)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "There are two Python files.\n"  # the answer, and only the answer
    assert "Looking." in out.stderr and "▸ list_files" in out.stderr  # progress goes to stderr
    again = ctxagent_run(repo, "-p", "and now?", "--continue", "--model", "anthropic:claude-sonnet-5-5", "--base-url", srv.url, "--output", "json")
    assert again.returncode == 0, again.stderr
    res = json.loads(again.stdout)
    assert res["steps"] == 1
    body = srv.requests()[-1]["body"]
    texts = json.dumps(body["messages"])
    assert "what files are here?" in texts and "and now?" in texts  # the resumed history was sent


def test_headless_without_yes_refuses_edits(repo: Path, scripted_server, ctxagent_run) -> None:
    srv = scripted_server([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "x"}}]},
        {"text": "I could not write the file."},
    ])
    out = ctxagent_run(repo, "-p", "make new.txt", "--model", "openai:gpt-5.4-mini", "--base-url", srv.url, "--output", "json")
    assert out.returncode == 6, out.stderr  # the turn ended, but what was asked was refused
    assert not (repo / "new.txt").exists()
    tool_msg = next(m for m in srv.requests()[-1]["body"]["messages"] if m["role"] == "tool")
    assert "permission denied" in tool_msg["content"] and "--yes" in tool_msg["content"]
    result = json.loads(out.stdout)
    assert result["stop_reason"] == "end_turn"
    assert result["refused"] == [{"tool": "write_file", "permission": "edit", "target": "new.txt"}]
    assert out.stderr.count("refused write_file new.txt") == 1 and "--yes" in out.stderr


def test_no_model_is_a_clear_config_error(repo: Path, ctxagent_run) -> None:
    out = ctxagent_run(repo, "-p", "hi", env={"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""})
    assert out.returncode == 2
    assert "ANTHROPIC_API_KEY or OPENAI_API_KEY" in out.stderr and "--model" in out.stderr
    assert out.stderr.count("no model configured") == 1 and out.stdout == ""
    assert not list((repo / ".ctxagent" / "sessions").glob("*.jsonl"))  # a failed start leaves no session


def test_version(repo: Path, ctxagent_run) -> None:
    out = ctxagent_run(repo, "--version")
    assert out.returncode == 0 and out.stdout.startswith("ctxagent ")
