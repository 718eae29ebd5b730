"""`--permission-mode plan --yes` (issue 30): `--yes` used to win silently, and the run was yolo — a
sub-agent wrote files and ran `touch`. The combination is refused, as any `--yes` with a mode that is
not yolo, before anything runs; and plan mode alone holds for a sub-agent's edits and commands too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

MODEL = "openai:gpt-5.4-mini"
TASK = "tidy the module"
CHILD = [
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "new.py", "content": "x = 1\n"}},
                    {"name": "shell", "arguments": {"command": "touch PWNED"}}]},
    {"text": "could not change anything"},
]


def _script() -> dict:
    call = {"name": "task", "arguments": {"description": TASK, "prompt": "write new.py and touch PWNED",
                                          "tools": ["write_file", "shell", "read_file"]}}
    return {"turns": [{"tool_calls": [call]}, {"text": "Plan: 1. add new.py."}], "agents": {TASK: CHILD}}


@pytest.mark.parametrize("mode", ["plan", "ask", "auto-edit"])
def test_yes_with_another_mode_is_refused_before_anything_runs(repo: Path, scripted_server, ctxagent_run, mode: str) -> None:  # noqa: ANN001
    srv = scripted_server(_script())
    for order in (["--permission-mode", mode, "--yes"], ["--yes", "--permission-mode", mode]):
        out = ctxagent_run(repo, "-p", "tidy", *order, "--model", MODEL, "--base-url", srv.url)
        assert out.returncode == 2, out.stderr
        assert f"--yes allows edits and commands without asking (yolo mode), and --permission-mode {mode}" in out.stderr
    assert srv.requests() == [] and not (repo / "new.py").exists() and not (repo / "PWNED").exists()
    assert not (repo / ".ctxagent").exists()
    out = ctxagent_run(repo, "--permission-mode", "plan", "--yes", "config")  # every command, not only -p
    assert out.returncode == 2 and "--yes allows edits" in out.stderr


def test_yes_with_yolo_is_the_same_thing(repo: Path, scripted_server, ctxagent_run) -> None:  # noqa: ANN001
    srv = scripted_server([{"text": "hi"}])
    out = ctxagent_run(repo, "-p", "hi", "--permission-mode", "yolo", "--yes", "--model", MODEL, "--base-url", srv.url,
                       "--output", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["permission_mode"] == "yolo"


def test_plan_mode_holds_for_a_subagent(repo: Path, scripted_server, ctxagent_run) -> None:  # noqa: ANN001
    srv = scripted_server(_script())
    out = ctxagent_run(repo, "-p", "tidy", "--permission-mode", "plan", "--model", MODEL, "--base-url", srv.url,
                       "--output", "json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["permission_mode"] == "plan" and result["result"] == "Plan: 1. add new.py."
    assert not (repo / "new.py").exists() and not (repo / "PWNED").exists()
    [child_log] = (repo / ".ctxagent" / "sessions" / "subagents").glob("*.jsonl")
    child = [json.loads(ln) for ln in child_log.read_text(encoding="utf-8").splitlines() if ln.strip()]
    results = [e["data"] for e in child if e["kind"] == "tool_result"]
    assert len(results) == 2 and all("refused: plan mode is on" in r["content"] for r in results), results
