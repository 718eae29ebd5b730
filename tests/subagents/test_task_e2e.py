"""The `task` tool end to end: `ctxagent -p` through the real anthropic and openai SDKs against the
scripted server, the parent's `task` call answered by a child with its own turns (script "agents")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

MODELS = ["anthropic:claude-sonnet-5-5", "openai:gpt-5.4-mini"]
TASK = "find the subtraction bug"


def script(child_turns: list[dict], args: dict | None = None) -> dict:
    call = {"name": "task", "arguments": {"description": TASK, "prompt": "Which line of calc.py is wrong?", **(args or {})}}
    return {
        "turns": [{"text": "Delegating.", "tool_calls": [call]}, {"text": "The sub-agent found it: calc.py line 2."}],
        "agents": {TASK: child_turns},
    }


CHILD = [
    {"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
    {"text": "calc.py line 2 returns a - b; it should be a + b."},
]


def sessions(repo: Path) -> tuple[list[dict], list[dict]]:
    parent_files = sorted((repo / ".ctxagent" / "sessions").glob("*.jsonl"))
    child_files = sorted((repo / ".ctxagent" / "sessions" / "subagents").glob("*.jsonl"))
    assert len(parent_files) == 1 and len(child_files) == 1
    read = [[json.loads(ln) for ln in f.read_text().splitlines() if ln.strip()] for f in (parent_files[0], child_files[0])]
    return read[0], read[1]


@pytest.mark.parametrize("model", MODELS)
def test_a_task_runs_a_child_with_its_own_linked_log(repo: Path, scripted_server, ctxagent_run, model: str) -> None:
    srv = scripted_server(script(CHILD))
    out = ctxagent_run(repo, "-p", "fix calc", "--model", model, "--base-url", srv.url, "--output", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"] == "The sub-agent found it: calc.py line 2."
    parent, child = sessions(repo)
    parent_id, child_start = parent[0]["data"]["session"], child[0]["data"]
    result = next(e["data"] for e in parent if e["kind"] == "tool_result" and e["data"]["name"] == "task")
    call = next(c for e in parent if e["kind"] == "assistant" for c in e["data"]["tool_calls"])
    # linked both ways: the parent's result names the child, the child's start names parent and call
    sub = result["meta"]["subagent"]
    assert child_start["session"] == sub["session"] and child_start["parent"] == parent_id
    assert child_start["parent_call"] == call["id"] == result["call_id"]
    assert sub["stop_reason"] == "end_turn" and sub["steps"] == 2 and sub["usage"]["output_tokens"] > 0
    assert "calc.py line 2 returns a - b" in result["content"]
    assert f"read_event session={sub['session']} id=" in result["content"]
    # the child ran its own tools: its read of calc.py is in ITS log, not the parent's
    assert any(e["kind"] == "tool_result" and e["data"]["name"] == "read_file" for e in child)
    assert not any(e["kind"] == "tool_result" and e["data"]["name"] == "read_file" for e in parent)
    # the child never saw the parent's history: its first request holds the prompt, not "fix calc"
    bodies = [r["body"] for r in srv.requests()]
    child_bodies = [b for b in bodies if "Sub-agent task: " + TASK in json.dumps(b)]
    assert len(child_bodies) == 2 and len(bodies) == 4
    assert "fix calc" not in json.dumps(child_bodies[0]) and "Which line of calc.py is wrong?" in json.dumps(child_bodies[0])
    tools = json.dumps(child_bodies[0].get("tools"))
    assert '"read_file"' in tools and '"write_file"' not in tools and '"task"' not in tools  # read-only, depth 1


@pytest.mark.parametrize("model", MODELS)
def test_the_step_limit_returns_what_the_child_had(repo: Path, scripted_server, ctxagent_run, model: str) -> None:
    looping = [{"text": f"Still looking ({i}).", "tool_calls": [{"name": "grep", "arguments": {"pattern": "add"}}]} for i in range(3)]
    srv = scripted_server(script(looping, {"max_steps": 2}))
    out = ctxagent_run(repo, "-p", "fix calc", "--model", model, "--base-url", srv.url, "--output", "json")
    assert out.returncode == 0, out.stderr  # the parent's step went on
    parent, child = sessions(repo)
    result = next(e["data"] for e in parent if e["kind"] == "tool_result" and e["data"]["name"] == "task")
    assert result["meta"]["subagent"]["stop_reason"] == "max_steps" and not result["is_error"]
    assert "step limit" in result["content"] and "Still looking (1)." in result["content"]
    assert len([e for e in child if e["kind"] == "assistant"]) == 2


def test_unknown_tools_and_nesting_are_clear_tool_errors(repo: Path, scripted_server, ctxagent_run) -> None:
    srv = scripted_server({"turns": [
        {"tool_calls": [{"name": "task", "arguments": {"description": "x", "prompt": "y", "tools": ["read_file", "teleport"]}},
                        {"name": "task", "arguments": {"description": "x", "prompt": "y", "tools": ["task"]}}]},
        {"text": "ok"}]})
    out = ctxagent_run(repo, "-p", "go", "--model", MODELS[0], "--base-url", srv.url)
    assert out.returncode == 0, out.stderr
    events = [json.loads(ln) for f in (repo / ".ctxagent" / "sessions").glob("*.jsonl") for ln in f.read_text().splitlines()]
    results = [e["data"] for e in events if e["kind"] == "tool_result"]
    assert results[0]["is_error"] and "unknown tool(s) for the sub-agent: teleport" in results[0]["content"]
    assert results[1]["is_error"] and "nesting depth is 1" in results[1]["content"]
    assert not (repo / ".ctxagent" / "sessions" / "subagents").exists() or not list((repo / ".ctxagent" / "sessions" / "subagents").glob("*"))


def test_read_event_opens_the_childs_events_and_nothing_else(repo: Path, scripted_server, ctxagent_run) -> None:
    srv = scripted_server(script(CHILD))
    assert ctxagent_run(repo, "-p", "fix calc", "--model", MODELS[1], "--base-url", srv.url).returncode == 0
    _, child = sessions(repo)
    child_id = child[0]["data"]["session"]
    read = next(e["id"] for e in child if e["kind"] == "tool_result")
    srv2 = scripted_server([
        {"tool_calls": [{"name": "read_event", "arguments": {"session": child_id, "id": read}},
                        {"name": "read_event", "arguments": {"session": "../../etc/passwd", "id": 0}},
                        {"name": "read_event", "arguments": {"session": "20260101-000000-abcdef", "id": 0}}]},
        {"text": "done"}])
    out = ctxagent_run(repo, "-p", "show", "--continue", "--model", MODELS[1], "--base-url", srv2.url)
    assert out.returncode == 0, out.stderr
    parent = [json.loads(ln) for ln in next((repo / ".ctxagent" / "sessions").glob("*.jsonl")).read_text().splitlines()]
    results = [e["data"] for e in parent if e["kind"] == "tool_result" and e["data"]["name"] == "read_event"]
    assert "return a - b" in results[0]["content"] and "output of read_file" in results[0]["content"]
    assert results[0]["meta"]["session"] == child_id
    assert results[1]["is_error"] and "looks like" in results[1]["content"]
    assert results[2]["is_error"] and "no sub-agent session 20260101-000000-abcdef" in results[2]["content"]


def test_report_shows_each_sub_agent_and_the_total_and_inspect_rebuilds_its_steps(repo: Path, scripted_server, ctxagent_run) -> None:
    srv = scripted_server(script(CHILD))
    assert ctxagent_run(repo, "-p", "fix calc", "--model", MODELS[0], "--base-url", srv.url).returncode == 0
    parent, child = sessions(repo)
    child_id = child[0]["data"]["session"]
    out = ctxagent_run(repo, "report", "--last")
    assert out.returncode == 0, out.stderr
    line = next(ln for ln in out.stdout.splitlines() if child_id in ln)
    child_in = sum(e["data"]["usage"]["input_tokens"] + e["data"]["usage"].get("cache_read", 0) + e["data"]["usage"].get("cache_write", 0)
                   for e in child if e["kind"] == "assistant")
    all_in = child_in + sum(e["data"]["usage"]["input_tokens"] + e["data"]["usage"].get("cache_read", 0) + e["data"]["usage"].get("cache_write", 0)
                            for e in parent if e["kind"] == "assistant")
    assert f"'{TASK}': 2 step(s), end_turn, {child_in:,} in" in line and "$" in line
    assert f"session total with sub-agents: {all_in:,} in" in out.stdout
    step = ctxagent_run(repo, "inspect", child_id, "--step", "2")
    assert step.returncode == 0, step.stderr
    assert "return a - b" in step.stdout and "Sub-agent task: " + TASK in step.stdout
