"""kill -9 of a real `ctxagent -p` while its sub-agent runs: both logs stay readable and linked, and
the resumed parent answers the interrupted `task` call instead of sending a dangling one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from .conftest import BIN

MODEL = "openai:gpt-5.4-mini"


def test_kill_9_mid_task_leaves_consistent_logs(repo: Path, scripted_server, ctxagent_run) -> None:
    steps = [{"text": f"step {i}", "tool_calls": [{"name": "grep", "arguments": {"pattern": "add"}}]} for i in range(400)]
    task = {"name": "task", "arguments": {"description": "long search", "prompt": "search forever", "max_steps": 200}}
    srv = scripted_server({"turns": [{"tool_calls": [task]}, {"text": "never reached"}], "agents": {"long search": steps}})
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-openai-000000000000000000"}
    proc = subprocess.Popen([str(BIN), "-p", "go", "--model", MODEL, "--base-url", srv.url], cwd=repo, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children = repo / ".ctxagent" / "sessions" / "subagents"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # kill once the sub-agent has run a few steps of its own
        logs = list(children.glob("*.jsonl")) if children.is_dir() else []
        if logs and logs[0].read_text().count('"kind": "tool_result"') + logs[0].read_text().count('"kind":"tool_result"') >= 3:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    (child_path,) = children.glob("*.jsonl")
    (parent_path,) = (repo / ".ctxagent" / "sessions").glob("*.jsonl")
    child = [json.loads(ln) for ln in child_path.read_text().splitlines()[:-1]]  # the last line may be cut
    parent = [json.loads(ln) for ln in parent_path.read_text().splitlines()]
    call = next(c for e in parent if e["kind"] == "assistant" for c in e["data"]["tool_calls"])
    assert child[0]["data"]["parent"] == parent[0]["data"]["session"] and child[0]["data"]["parent_call"] == call["id"]
    assert not any(e["kind"] == "tool_result" for e in parent)  # killed mid-task: no result yet
    srv2 = scripted_server([{"text": "resumed"}])
    out = ctxagent_run(repo, "-p", "again", "--continue", "--model", MODEL, "--base-url", srv2.url)
    assert out.returncode == 0, out.stderr
    parent = [json.loads(ln) for ln in parent_path.read_text().splitlines()]
    answer = next(e["data"] for e in parent if e["kind"] == "tool_result")
    assert answer["call_id"] == call["id"] and answer["is_error"] and "interrupted" in answer["content"]
    assert len(list((repo / ".ctxagent" / "sessions").glob("*.jsonl"))) == 1  # --continue found the parent, not the child
