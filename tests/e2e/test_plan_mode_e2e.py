"""`--permission-mode plan` through the real SDKs against the scripted server: the model's edit and
command are refused with the reason (nothing changes, nothing is asked), a read runs, the request
keeps every tool schema (the cached prefix is the same in every mode), the message carries the plan
note, and the plan is printed on stdout with exit 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

MODELS = ["anthropic:claude-sonnet-5-5", "openai:gpt-5.4-mini"]
PLAN = "Plan: 1. change `a - b` to `a + b` in calc.py. 2. run the tests."


def _tool_texts(body: dict, model: str) -> list[str]:
    if model.startswith("anthropic"):
        return [str(b.get("content")) for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], list)
                for b in m["content"] if b.get("type") == "tool_result"]
    return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def _tool_names(body: dict, model: str) -> list[str]:
    if model.startswith("anthropic"):
        return [t["name"] for t in body["tools"]]
    return [t["function"]["name"] for t in body["tools"]]


@pytest.mark.parametrize("model", MODELS)
def test_plan_mode_refuses_an_edit_and_prints_the_plan(repo: Path, scripted_server, ctxagent_run, read_session,
                                                       model: str) -> None:
    srv = scripted_server([
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}},
                        {"name": "edit_file", "arguments": {"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}},
                        {"name": "shell", "arguments": {"command": "touch PWNED"}}]},
        {"text": PLAN},
    ])
    before = (repo / "calc.py").read_text()
    out = ctxagent_run(repo, "-p", "fix add", "--permission-mode", "plan", "--model", model, "--base-url", srv.url,
                       "--output", "json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["result"] == PLAN and result["permission_mode"] == "plan" and result["refused"] == []
    assert (repo / "calc.py").read_text() == before and not (repo / "PWNED").exists()
    assert "plan mode — only read-only tools ran, nothing was changed" in out.stderr

    first, second = (r["body"] for r in srv.requests())
    assert "plan mode is on" in json.dumps(first["messages"], ensure_ascii=False)  # the note rides with the message
    assert _tool_names(first, model) == _tool_names(second, model)
    assert {"edit_file", "write_file", "shell", "run_tests"} <= set(_tool_names(first, model))  # schemas kept
    results = _tool_texts(second, model)
    assert len(results) == 3 and "return a - b" in results[0]
    assert "refused: plan mode is on, and edit_file would change files" in results[1]
    assert "refused: plan mode is on, and shell would run a command" in results[2]

    events = read_session(repo, result["session"])
    decisions = [e["data"] for e in events if e["kind"] == "permission"]
    assert [d["decision"] for d in decisions] == ["deny", "deny"] and {d["reason"] for d in decisions} == {"plan mode"}
    [user] = [e["data"] for e in events if e["kind"] == "user"]
    assert user["text"] == "fix add" and user["plan"] is True  # the user's words as typed; the note is the flag


def test_plan_text_mode_prints_only_the_plan_on_stdout(repo: Path, scripted_server, ctxagent_run) -> None:
    srv = scripted_server([{"tool_calls": [{"name": "write_file", "arguments": {"path": "new.py", "content": "x"}}]},
                           {"text": "计划：先读 calc.py，再改。"}])
    out = ctxagent_run(repo, "-p", "修复 add", "--permission-mode", "plan", "--model", "openai:gpt-5.4-mini",
                       "--base-url", srv.url)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "计划：先读 calc.py，再改。\n" and not (repo / "new.py").exists()
