"""/diff and /commit's agent side (agent/checkpoints/session_changes.py) on a real repository, a real
agent and real git: the session's changes from its first checkpoint, a drafted message (the model's,
or a template), and a commit of exactly those files — hooks not run, other staged work left staged,
a filtered file refused, an empty message refused."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ctxagent.agent.checkpoints.session_changes import (
    commit_changes,
    draft_message,
    session_changes,
    template_message,
)
from ctxagent.agent.config import load_config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session

IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          env={**os.environ, **IDENTITY}).stdout


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "other.py").write_text("X = 1\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    script = [{"tool_calls": [
        {"name": "edit_file", "arguments": {"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}},
        {"name": "write_file", "arguments": {"path": "notes/说明.md", "content": "加法已修复\n"}}]},
        {"text": "Fixed."}]
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script, ensure_ascii=False))
    session = open_session(repo, load_config(repo, {"model": f"scripted:{path}", "permission_mode": "yolo"}))
    made = create_agent(session)
    yield made
    made.session.log.close()


def test_nothing_to_show_before_the_agent_changes_a_file(agent: Any) -> None:
    changes = session_changes(agent.checkpoints, agent.session.log)
    assert changes.files == [] and "has not changed any file" in changes.note


def test_the_session_diff_and_a_template_message(agent: Any) -> None:
    agent.run_turn("fix the add function 修复加法")
    changes = session_changes(agent.checkpoints, agent.session.log)
    assert changes.paths == ["calc.py", "notes/说明.md"] and changes.summary() == "2 files changed, +2 -1"
    assert "-    return a - b\n+    return a + b" in changes.patch and "+加法已修复" in changes.patch
    message = template_message(changes)
    assert message.startswith("Update 2 files: calc.py, 说明.md\n\nRequested:\n- fix the add function 修复加法\n")
    assert "A notes/说明.md (+1 -0)" in message


def test_the_models_draft_and_its_fallback(agent: Any) -> None:
    agent.run_turn("fix add")
    changes = session_changes(agent.checkpoints, agent.session.log)
    prompts: list[str] = []
    text, how = draft_message(changes, lambda p: (prompts.append(p), "Fix add: use +\x1b[31m\n\nBody.")[1])
    assert how == "model" and text == "Fix add: use +\n\nBody.\n" and "return a + b" in prompts[0]

    def broken(prompt: str) -> str:
        raise RuntimeError("401 from the summary model")

    text, how = draft_message(changes, broken)
    assert text == template_message(changes) and "RuntimeError: 401 from the summary model" in how


def test_commit_takes_exactly_the_sessions_files_and_runs_no_hook(agent: Any) -> None:
    repo = agent.session.root
    agent.run_turn("fix add")
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\ntouch HOOK_RAN\nexit 1\n")
    hook.chmod(0o755)
    (repo / "other.py").write_text("X = 2\n")
    git(repo, "add", "other.py")  # the user's own staged work
    changes = session_changes(agent.checkpoints, agent.session.log)
    done = commit_changes(repo, [p for p in changes.paths if p != "other.py"], "Fix add\n\n#42 stays in the body\n")
    assert done.ok, done.detail
    assert done.detail.endswith(" Fix add")
    assert not (repo / "HOOK_RAN").exists()
    assert git(repo, "-c", "core.quotepath=false", "show", "--name-only", "--format=", "HEAD").split() == [
        "calc.py", "notes/说明.md"]
    assert "#42 stays in the body" in git(repo, "log", "-1", "--format=%B")
    assert git(repo, "diff", "--cached", "--name-only").split() == ["other.py"]  # still staged, not committed


def test_a_filtered_file_an_empty_message_and_no_files_are_refused(agent: Any) -> None:
    repo = agent.session.root
    agent.run_turn("fix add")
    (repo / ".gitattributes").write_text("calc.py filter=crypt\n")
    refused = commit_changes(repo, ["calc.py"], "Fix add\n")
    assert not refused.ok and "calc.py has a filter attribute" in refused.detail
    assert not commit_changes(repo, ["calc.py"], "  \n").ok
    assert not commit_changes(repo, [], "Fix\n").ok
    assert git(repo, "log", "--format=%s").split("\n")[0] == "init"
