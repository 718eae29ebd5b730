"""`ctxagent doctor` counts model calls, and the user's own @file / !command calls are none (issue 24,
item 7): a real session (the real Agent, the in-process scripted model) checked by the real console
script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from ctxagent.agent.config import load_config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session

BIN = Path(sys.executable).with_name("ctxagent")


def test_direct_calls_are_not_model_calls_without_a_report(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "It subtracts."}]), encoding="utf-8")
    session = open_session(repo, load_config(repo, {"model": f"scripted:{script}", "permission_mode": "yolo"}))
    agent = create_agent(session)
    agent.run_turn("what does @calc.py do?", threading.Event())  # a direct read_file, then one model call
    agent.run_command("ls", threading.Event())
    agent.run_command("git status --short", threading.Event())
    direct = [e for e in session.log.events if e.kind == "assistant" and e.assistant.direct]
    assert len(direct) == 3 and len(session.log.of_kind("context_report")) == 1
    session.log.close()
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-key-0000000000000000", "PYTHONIOENCODING": "utf-8"}
    out = subprocess.run([str(BIN), "doctor", session.id, "--json"], cwd=repo, env=env, capture_output=True,
                         text=True, timeout=120)
    checks = {c["check"]: c for c in json.loads(out.stdout)}
    assert checks["per-step trimming"]["status"] == "ok", checks["per-step trimming"]
    assert checks["per-step trimming"]["detail"] == "a context report for the one step"
    assert out.returncode == 0, out.stdout
