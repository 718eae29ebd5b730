"""Session operations (agent/session_ops.py) on a real session: the real Agent, checkpoints, SQLite
memory and the in-process scripted model; `ctxagent rewind` as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from ctxagent.agent.config import load_config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session
from ctxagent.agent.session_ops import log_turns, rewind
from ctxagent.agent.updates import PermissionDecision, PermissionRequest
from ctxagent.context.history import SessionLog
from ctxagent.context.memory import MemoryStore
from ctxagent.context.memory.recall import MemoryRecall

BIN = Path(sys.executable).with_name("ctxagent")

TWO_TURNS: list[dict[str, Any]] = [
    {"text": "Reading calc.py.", "tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
    {"text": "It subtracts."},
    {"text": "Fixing.", "tool_calls": [
        {"name": "edit_file", "arguments": {"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}}]},
    {"text": "Fixed: we decided to use plain addition."},
    {"text": "after the rewind"},
]


def _repo(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)
    return root


def _session(tmp_path: Path, script: list[dict[str, Any]], **flags: Any) -> Any:
    repo = _repo(tmp_path / "repo")
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    return open_session(repo, load_config(repo, {"model": f"scripted:{path}", "permission_mode": "yolo", **flags}))


def _recalled(store: MemoryStore, session_id: str, query: str) -> str:
    from ctxagent.context.tokens import get_counter

    return MemoryRecall(store, session_id).warm_block(query, ["calc.py"], 3, 4000, get_counter("o200k_base"))


def test_rewind_restores_code_and_conversation_and_retires_the_turns_memory(tmp_path: Path) -> None:
    session = _session(tmp_path, TWO_TURNS)
    agent = create_agent(session)
    agent.run_turn("what does add do?", threading.Event())
    agent.run_turn("fix add", threading.Event())
    store = agent.memory
    assert store is not None
    assert "edited calc.py" in _recalled(store, session.id, "calc.py add")  # issue 12: recalled before…
    result = agent.rewind(2, "both")
    assert (session.root / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert result.memory_retired >= 1 and not result.warnings
    warm = _recalled(store, session.id, "calc.py add")
    assert "edited calc.py" not in warm and "plain addition" not in warm  # …and not after the rewind
    assert any("edited calc.py" in r.content and not r.current for r in store.list())  # retired, not deleted
    # the next request the agent builds does not carry them either
    agent.preview()
    assert agent.last_build is not None and "edited calc.py" not in agent.last_build.warm_text
    # nor does a new session over the same memory
    assert "edited calc.py" not in _recalled(MemoryStore.open(session.state_dir / "memory.db"), "another", "calc.py")
    # the conversation goes on (turn numbers are never reused: turn 2 stays in the log, hidden)
    done = agent.run_turn("say something else", threading.Event())
    assert done.turn == 3 and done.text == "after the rewind"
    assert [t.turn for t in agent.rewind_menu().turns] == [1, 3]


def test_one_rewind_writer_one_payload_with_or_without_checkpoints(tmp_path: Path) -> None:
    session = _session(tmp_path, TWO_TURNS)
    agent = create_agent(session)
    agent.run_turn("what does add do?", threading.Event())
    agent.run_turn("fix add", threading.Event())
    menu = agent.rewind_menu()
    assert menu.has_code and [t.turn for t in menu.turns] == [1, 2] and menu.turns[1].files_changed == ["calc.py"]
    assert [t.files_changed for t in log_turns(session.log)] == [[], ["calc.py"]]  # the log-only view agrees
    agent.rewind(2, "conversation")
    with_cps = session.log.events[-1]
    session.log.close()
    log = SessionLog.load(session.log.path)
    rewind(log, 1, "conversation")  # no checkpoints, no memory: the same writer
    without = log.events[-1]
    assert with_cps.kind == without.kind == "rewind"
    assert set(with_cps.data) == set(without.data) == {"to_id", "turn", "mode"}
    assert (with_cps.data["turn"], with_cps.data["mode"]) == (2, "conversation")
    with pytest.raises(Exception, match="no code checkpoints"):
        rewind(log, 1, "code")
    log.close()


def test_remember_pins_in_the_log_and_the_store(tmp_path: Path) -> None:
    session = _session(tmp_path, TWO_TURNS)
    agent = create_agent(session)
    agent.remember("  不要修改配置文件 ")
    ev = session.log.events[-1]
    assert ev.kind == "memory" and ev.data["text"] == "不要修改配置文件" and ev.data["op"] == "remember"
    assert agent.memory is not None
    assert any(r.content == "不要修改配置文件" and r.pinned for r in agent.memory.list(type="constraint"))
    with pytest.raises(ValueError):
        agent.remember("   ")


def test_new_session_with_summary_carries_pins_and_is_a_child(tmp_path: Path) -> None:
    session = _session(tmp_path, TWO_TURNS)
    agent = create_agent(session)
    agent.run_turn("what does add do? Never touch setup.cfg.", threading.Event())
    new = agent.new_session(with_summary=True)
    assert new.id != session.id and new.log.events[0].data.get("parent") == session.id
    kinds = [e.kind for e in new.log.events]
    assert "compaction" in kinds and "Never touch setup.cfg" in new.log.of_kind("compaction")[0].data["summary"]
    assert any("Never touch setup.cfg" in e.data.get("text", "") for e in new.log.of_kind("memory"))


def test_tool_duration_leaves_out_the_permission_prompt(tmp_path: Path) -> None:
    session = _session(tmp_path, TWO_TURNS[2:4], permission_mode="ask")
    waited = 2.0

    def slow_user(req: PermissionRequest) -> PermissionDecision:
        time.sleep(waited)  # the user reads the diff before allowing
        return PermissionDecision(allow=True)

    agent = create_agent(session, approver=slow_user)
    agent.run_turn("fix add", threading.Event())
    result = session.log.of_kind("tool_result")[-1]
    assert result.data["name"] == "edit_file" and not result.data["is_error"]
    assert result.data["duration_ms"] < waited * 1000


def test_cli_rewind_retires_memory_too(tmp_path: Path) -> None:
    session = _session(tmp_path, TWO_TURNS)
    agent = create_agent(session)
    agent.run_turn("what does add do?", threading.Event())
    agent.run_turn("fix add", threading.Event())
    session.log.close()
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    out = subprocess.run([str(BIN), "rewind", session.id, "--to", "2", "--json"], cwd=session.root, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["memory_retired"] >= 1 and data["files_restored"] == ["calc.py"]
    store = MemoryStore.open(session.state_dir / "memory.db")
    assert "edited calc.py" not in _recalled(store, session.id, "calc.py")
    store.close()
