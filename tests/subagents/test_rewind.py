"""A sub-agent with edit tools changes files; `/rewind` (code) of the parent's turn undoes them: the
parent checkpoints before the `task` call, and its turn's end covers what the child left."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ctxagent.agent.config import Config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session

EDITS = {"description": "tidy notes", "prompt": "rewrite notes.txt and add a file",
         "tools": ["write_file", "edit_file"]}
READS = {"description": "look around", "prompt": "list the files"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout


def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({
        "turns": [{"text": "hello"},
                  {"tool_calls": [{"name": "task", "arguments": EDITS}, {"name": "task", "arguments": READS}]},
                  {"text": "the sub-agents are done"}],
        "agents": {
            "tidy notes": [
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "new/child.txt", "content": "子代理写的\n"}},
                                {"name": "edit_file", "arguments": {"path": "notes.txt", "old_text": "beta", "new_text": "gamma"}}]},
                {"text": "tidied"}],
            "look around": [{"tool_calls": [{"name": "list_files", "arguments": {}}]}, {"text": "looked"}],
        }}, ensure_ascii=False), encoding="utf-8")
    return path


def test_rewinding_the_parents_turn_undoes_its_sub_agents_edits(work_repo: Path, tmp_path: Path) -> None:
    git(work_repo, "add", "-A")
    git(work_repo, "commit", "-qm", "init")
    session = open_session(work_repo, Config(model=f"scripted:{script(tmp_path)}", permission_mode="yolo", memory=False))
    agent = create_agent(session)
    agent.run_turn("hi")
    done = agent.run_turn("Tidy the notes with a sub-agent.")
    assert done.text == "the sub-agents are done", done.error
    assert (work_repo / "notes.txt").read_text() == "alpha\ngamma\n"
    assert (work_repo / "new" / "child.txt").read_text(encoding="utf-8") == "子代理写的\n"
    (tidy, look) = [e.tool_result for e in agent.log.of_kind("tool_result")]
    assert sorted(tidy.meta.changed_files) == ["new/child.txt", "notes.txt"]  # the parent's log says what changed
    assert not look.meta.changed_files
    # the parent's checkpoint, taken before the task calls, belongs to turn 2
    assert [e.data["turn"] for e in agent.log.of_kind("checkpoint")] == [2]
    turns = agent.rewind_menu().turns
    assert sorted(turns[-1].files_changed) == ["new/child.txt", "notes.txt"]  # /rewind lists the child's files
    result = agent.rewind(2, "code")
    assert not result.skipped and not result.changed_outside  # what the child left is the agent's, not "outside"
    assert (work_repo / "notes.txt").read_text() == "alpha\nbeta\n"
    assert not (work_repo / "new").exists()
    assert git(work_repo, "status", "--porcelain").strip() == ""
    agent.log.close()


def test_a_read_only_sub_agent_takes_no_checkpoint(work_repo: Path, tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"tool_calls": [{"name": "task", "arguments": READS}]}, {"text": "ok"}],
                                "agents": {"look around": [{"text": "looked"}]}}))
    session = open_session(work_repo, Config(model=f"scripted:{path}", permission_mode="yolo", memory=False))
    agent = create_agent(session)
    assert agent.run_turn("look").text == "ok"
    assert not agent.log.of_kind("checkpoint")
    agent.log.close()
