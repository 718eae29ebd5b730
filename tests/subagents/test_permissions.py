"""A sub-agent asks through its parent's approver (the request names it), headless without --yes
refuses, and its memory writes carry it as author and never bind."""

from __future__ import annotations

import json
from pathlib import Path

from ctxagent.agent.config import Config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session
from ctxagent.agent.updates import PermissionDecision, PermissionRequest
from ctxagent.context.history import SessionLog
from ctxagent.context.memory import MemoryStore

RULE = "Never edit the generated files under build/."


def child_script(tmp_path: Path) -> Path:
    calls = [{"name": "task", "arguments": {"description": "tidy notes", "prompt": "rewrite notes.txt",
                                            "tools": ["write_file", "store_memory"]}}]
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"tool_calls": calls}, {"text": "ok"}], "agents": {"tidy notes": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "gamma\n"}},
                        {"name": "store_memory", "arguments": {"content": RULE, "type": "constraint"}}]},
        {"text": "tidied"}]}}))
    return path


def test_a_sub_agent_asks_the_parents_approver_and_writes_memory_as_itself(work_repo: Path, tmp_path: Path) -> None:
    asked: list[PermissionRequest] = []

    def approve(req: PermissionRequest) -> PermissionDecision:
        asked.append(req)
        return PermissionDecision(allow=True)

    session = open_session(work_repo, Config(model=f"scripted:{child_script(tmp_path)}"))
    agent = create_agent(session, approver=approve)
    done = agent.run_turn("Please tidy the notes.")
    assert done.stop_reason == "end_turn", done.error
    (child_path,) = (work_repo / ".ctxagent" / "sessions" / "subagents").glob("*.jsonl")
    child = SessionLog.load(child_path)
    assert [r.tool for r in asked] == ["write_file", "store_memory"]  # asked like the parent's own
    assert all(r.agent.startswith(f"sub-agent {child.session_id}") and "tidy notes" in r.agent for r in asked)
    assert (work_repo / "notes.txt").read_text() == "gamma\n"
    store = MemoryStore.open(work_repo / ".ctxagent" / "memory.db")
    (record,) = [r for r in store.list(type="constraint") if r.content == RULE and r.provenance == "subagent"]
    assert not record.pinned and record.session == child.session_id
    agent.parts.memory.close()  # type: ignore[union-attr]  # memory is on in this session
    store.close()


def test_headless_without_yes_refuses_a_sub_agents_edit(repo: Path, scripted_server, ctxagent_run, tmp_path: Path) -> None:
    data = json.loads(child_script(tmp_path).read_text())
    srv = scripted_server(data)
    before = (repo / "calc.py").read_text()
    out = ctxagent_run(repo, "-p", "tidy", "--model", "anthropic:claude-sonnet-5-5", "--base-url", srv.url)
    assert out.returncode == 6, out.stderr  # headless: a refused edit is said in the exit code
    assert "refused write_file notes.txt" in out.stderr
    (child_path,) = (repo / ".ctxagent" / "sessions" / "subagents").glob("*.jsonl")
    results = [json.loads(ln)["data"] for ln in child_path.read_text().splitlines() if '"tool_result"' in ln]
    write = next(r for r in results if r["name"] == "write_file")
    assert write["is_error"] and "headless without --yes" in write["content"]
    assert not (repo / "notes.txt").exists() and (repo / "calc.py").read_text() == before


def test_a_sub_agents_constraint_never_binds_even_in_the_users_words() -> None:
    from ctxagent.context.language.provenance import MODEL, SUBAGENT, may_pin

    assert may_pin(MODEL, RULE, [RULE]) and not may_pin(SUBAGENT, RULE, [RULE])
