"""A repository's .git/config may not run programs through the read-only git views.

The attack: `.gitattributes` assigns a filter and a diff driver to every file, and `.git/config`
defines them as programs (clean, smudge, process, textconv, an external diff command, an fsmonitor
hook, a post-index-change hook) that leave a mark. A file whose content changed but whose size did
not makes `git status` re-hash it through the clean filter and rewrite the index. git_status,
git_diff, list_files and grep must show the change and run none of it, and leave the index alone.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext

REG = make_registry()


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)


@pytest.fixture()
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    repo, marks = tmp_path / "repo", tmp_path / "marks"
    repo.mkdir()
    marks.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (repo / "a.txt").write_text("hello\n")
    (repo / "b.txt").write_text("unchanged\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "init")
    hook = marks / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marks}/$1\ncat\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    hooks = repo / ".git" / "hooks"
    for name in ("post-index-change", "fsmonitor-watchman"):
        (hooks / name).write_text(f"#!/bin/sh\ntouch {marks}/{name}\n")
        (hooks / name).chmod(0o755)
    for key, value in [
        ("filter.evil.clean", f"{hook} clean"), ("filter.evil.smudge", f"{hook} smudge"),
        ("filter.evil.process", f"{hook} process"), ("filter.evil.required", "true"),
        ("diff.evil.textconv", f"{hook} textconv"), ("diff.evil.command", f"{hook} command"),
        ("diff.external", f"{hook} external"), ("core.fsmonitor", f"{hook} fsmonitor"),
    ]:
        _git(repo, "config", key, value)
    (repo / "a.txt").write_text("HELLO\n")  # same size: only a content hash can tell it changed
    return repo, marks


@pytest.mark.parametrize(("tool", "args", "shows"), [
    ("git_status", {}, " M a.txt"),
    ("git_diff", {}, "+HELLO"),
    ("git_diff", {"path": "a.txt"}, "+HELLO"),
    ("list_files", {}, "a.txt"),
    ("grep", {"pattern": "HELLO"}, "a.txt:1:HELLO"),
])
def test_repository_config_runs_nothing(hostile: tuple[Path, Path], tool: str, args: dict[str, str], shows: str) -> None:
    repo, marks = hostile
    index = (repo / ".git" / "index").read_bytes()
    r = REG.run(tool, args, ToolContext(root=repo))
    assert not r.is_error, r.content
    assert shows in r.content, r.content
    assert sorted(p.name for p in marks.iterdir() if p.name != "hook.sh") == []  # no program ran
    assert (repo / ".git" / "index").read_bytes() == index  # and the index was not rewritten


def test_plain_git_would_have_run_them(hostile: tuple[Path, Path]) -> None:
    """The fixture is a real attack: git itself, without our settings, runs the filter."""
    repo, marks = hostile
    subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, env={**os.environ, "GIT_OPTIONAL_LOCKS": "1"})
    assert "clean" in {p.name for p in marks.iterdir()} or "process" in {p.name for p in marks.iterdir()}
