"""A code-only rewind through the real loop: the next request must not tell the model the undone change
still holds (issue 24, item 2). The real Agent, tools, checkpoints and SQLite memory, the in-process
scripted model (whose received bodies are read back), and `ctxagent rewind --code` as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from ctxagent.agent.config import load_config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session
from ctxagent.context.builder.rebuild import rebuild_step
from ctxagent.context.history import SessionLog
from ctxagent.context.memory import MemoryStore

BIN = Path(sys.executable).with_name("ctxagent")
CALC = "def add(a, b):\n    return a - b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"


def _script() -> list[dict[str, Any]]:
    return [
        {"text": "Reading calc.py.", "tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
        {"text": "It subtracts."},
        {"text": "Fixing and testing.", "tool_calls": [
            {"name": "edit_file", "arguments": {"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}},
            {"name": "run_tests", "arguments": {"command": PYTEST}}]},
        {"text": "Fixed; the tests pass."},
        {"text": "What now?"},
        {"text": "Still here."},
    ]


def _session(tmp_path: Path) -> Any:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text(CALC, encoding="utf-8")
    (repo / "test_calc.py").write_text(TEST_CALC, encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(_script()), encoding="utf-8")
    return open_session(repo, load_config(repo, {"model": f"scripted:{script}", "permission_mode": "yolo"}))


def _last_warm(agent: Any) -> str:
    """The working-memory block of the last request the model received (the scripted model keeps the
    bodies it was sent)."""
    body = agent.parts.provider.requests[-1]
    return "\n".join(m["content"] for m in body["messages"] if m.get("kind") == "warm")


def _two_turns(tmp_path: Path) -> tuple[Any, Any]:
    session = _session(tmp_path)
    agent = create_agent(session)
    agent.run_turn("what does add do?", threading.Event())
    agent.run_turn("fix add and run the tests", threading.Event())
    assert (session.root / "calc.py").read_text() == CALC.replace("a - b", "a + b")
    return session, agent


def test_the_request_after_a_code_rewind_says_the_change_is_undone(tmp_path: Path) -> None:
    session, agent = _two_turns(tmp_path)
    agent.run_turn("do the tests of calc.py pass?", threading.Event())  # a third turn: its request still carries turn 2's change
    before = _last_warm(agent)
    assert "calc.py (turn 2)" in before and "edited calc.py" in before and "1 passed" in before
    result = agent.rewind(2, "code")
    assert (session.root / "calc.py").read_text() == CALC and result.files_restored == ["calc.py"]
    assert result.memory_retired >= 2 and not result.warnings  # the change record and the test note
    notice = session.log.events[-1]
    assert notice.kind == "code_rewind" and notice.data["turn"] == 2 and notice.data["restored"] == ["calc.py"]
    agent.run_turn("do the tests of calc.py pass now?", threading.Event())
    after = _last_warm(agent)
    assert "rewound the code to before turn 2" in after and "turns 2–3 changed is undone" in after
    assert "calc.py (turn 2)" not in after  # the ledger's files list
    assert "edited calc.py" not in after and "1 passed" not in after  # memory's change and test records
    sent = json.dumps(agent.parts.provider.requests[-1], ensure_ascii=False)
    assert "Fixing and testing." in sent  # the conversation itself is kept: only the code went back
    # the conversation's own records stay recalled: a code rewind retires only what described the code
    store = agent.memory
    assert store is not None
    retired = [r for r in store.list() if not r.current]
    assert {r.type for r in retired} <= {"change", "note"} and any(r.type == "change" for r in retired)
    # inspect rebuilds the step after the rewind from the log alone, byte for byte
    events = list(session.log.events)
    last_step = max(e.context_report.step for e in events if e.kind == "context_report")
    from ctxagent.tui.cli.inspect import wire_body

    assert rebuild_step(events, last_step, wire_body).verified


def test_cli_code_rewind_retires_the_change_records_and_the_next_run_is_told(tmp_path: Path) -> None:
    session, agent = _two_turns(tmp_path)
    session.log.close()
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    out = subprocess.run([str(BIN), "rewind", session.id, "--to", "2", "--code", "--json"], cwd=session.root,
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["files_restored"] == ["calc.py"] and data["memory_retired"] >= 1 and data["rewind_event_id"] is not None
    store = MemoryStore.open(session.state_dir / "memory.db")
    changes = [r for r in store.list(type="change") if "calc.py" in r.content]
    assert changes and not any(r.current for r in changes)  # kept, retired
    store.close()
    log = SessionLog.load(session.log.path)
    assert log.events[-1].kind == "code_rewind" and log.events[-1].id == data["rewind_event_id"]
    log.close()
    resumed = open_session(session.root, session.config, session.id)
    again = create_agent(resumed)
    again.preview()
    assert again.last_build is not None
    warm = again.last_build.warm_text
    assert "rewound the code to before turn 2" in warm and "calc.py (turn 2)" not in warm and "edited calc.py" not in warm
    resumed.log.close()
