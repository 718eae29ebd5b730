"""git settings a repository ships never run a program (issue 10): a shadow repository's fsmonitor and
hooks, the user repository's fsmonitor and filter drivers. Each attack has a control that shows plain
git does run it, so the test proves the protection and not an inert setup."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from attack_helpers import git, headless, no_traceback, run_cli
from ctxagent.agent.checkpoints.store import Checkpoints
from ctxagent.context.floor.gitsafe import DIFF_SAFE_FLAGS, driver_overrides, git_env, open_git, run_git


def _hostile_shadow(root: Path, marks: Path) -> Path:
    """`.ctxagent/shadow.git` as an attacker ships it: an fsmonitor command and a reference-transaction hook."""
    shadow = root / ".ctxagent" / "shadow.git"
    shadow.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "--bare", str(shadow)], check=True)
    subprocess.run(["git", "--git-dir", str(shadow), "config", "core.fsmonitor", f"touch {marks / 'FSMONITOR'}; echo"], check=True)
    hook = shadow / "hooks" / "reference-transaction"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\ntouch {marks / 'HOOK'}\n")
    hook.chmod(0o755)
    return shadow


def _shadow_env(root: Path, shadow: Path) -> dict[str, str]:
    return {"GIT_DIR": str(shadow), "GIT_WORK_TREE": str(root), "GIT_INDEX_FILE": str(shadow.parent / "shadow.index"),
            "GIT_AUTHOR_NAME": "x", "GIT_AUTHOR_EMAIL": "x@e", "GIT_COMMITTER_NAME": "x", "GIT_COMMITTER_EMAIL": "x@e"}


def _snapshot_commands(root: Path, shadow: Path, *, safe: bool) -> None:
    """What the first checkpoint runs: add, write-tree, commit-tree, update-ref."""
    env = _shadow_env(root, shadow)

    def run(*args: str) -> bytes:
        if safe:
            return run_git(list(args), cwd=root, env=env, config=[("core.bare", "false")]).stdout
        return subprocess.run(["git", "-c", "core.bare=false", *args], cwd=root, env={**os.environ, **env},
                              capture_output=True, check=False).stdout

    run("add", "--all", "--", ".", ":(exclude).ctxagent")
    tree = run("write-tree").decode().strip()
    commit = run("commit-tree", tree, "-m", "snapshot").decode().strip()
    run("update-ref", "refs/ctxagent/x", commit)


def test_shipped_shadow_settings_do_not_run_with_the_safe_git_command(tmp_path: Path) -> None:
    control, root = tmp_path / "control", tmp_path / "root"
    for d in (control, root):
        d.mkdir()
        (d / "a.txt").write_text("hello\n")
    _snapshot_commands(control, _hostile_shadow(control, control), safe=False)
    assert (control / "FSMONITOR").exists() and (control / "HOOK").exists()  # the attack is real with plain git
    _snapshot_commands(root, _hostile_shadow(root, root), safe=True)
    assert not (root / "FSMONITOR").exists() and not (root / "HOOK").exists()


def test_shipped_shadow_is_refused_and_runs_nothing_at_the_first_checkpoint(tmp_path: Path, servers) -> None:
    """An unpacked tarball (no git, so nothing is tracked) with a hostile shadow.git: its `.ctxagent/`
    is not one ctxagent made, so the run is refused before anything starts. Once the user accepts
    the folder (`ctxagent trust --state`), the edit happens, the checkpoint is still refused with a
    message, and neither the fsmonitor nor the hook runs."""
    root = tmp_path / "unpacked"
    root.mkdir()
    (root / "a.txt").write_text("old\n")
    _hostile_shadow(root, tmp_path)
    srv = servers([{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "new\n"}}]}, {"text": "edited"}])
    out = headless(root, srv.base_url, "edit a.txt", "--yes")
    no_traceback(out)
    assert out.returncode == 2 and "ctxagent did not create it" in out.stderr and "trust --state" in out.stderr
    assert srv.requests == [] and (root / "a.txt").read_text() == "old\n"
    assert run_cli(root, "trust", "--state").returncode == 0
    out = headless(root, srv.base_url, "edit a.txt", "--yes")
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    assert (root / "a.txt").read_text() == "new\n"  # the turn went on
    assert "was not created by ctxagent" in out.stderr and "core.fsmonitor" in out.stderr
    assert not (tmp_path / "FSMONITOR").exists() and not (tmp_path / "HOOK").exists()


def test_committed_shadow_is_refused_before_anything_runs(repo: Path, tmp_path: Path, servers) -> None:
    _hostile_shadow(repo, tmp_path)
    git(repo, "add", "-f", ".ctxagent")
    git(repo, "commit", "-qm", "ship a shadow repository")
    srv = servers([{"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "x\n"}}]}, {"text": "ok"}])
    out = headless(repo, srv.base_url, "edit", "--yes")
    no_traceback(out)
    assert out.returncode == 2 and "ships it" in out.stderr
    assert not (tmp_path / "FSMONITOR").exists() and not (tmp_path / "HOOK").exists()
    assert not (repo / "b.txt").exists() and srv.requests == []


def _hostile_user_repo(repo: Path, marks: Path) -> None:
    """The user's own repository with a .git/config a tarball could carry: fsmonitor and a clean filter."""
    (repo / ".gitattributes").write_text("*.py filter=evil\n")
    git(repo, "config", "core.fsmonitor", f"touch {marks / 'USER_FSMONITOR'}; echo")
    git(repo, "config", "filter.evil.clean", f"touch {marks / 'CLEAN'}; cat")
    git(repo, "config", "filter.evil.process", f"touch {marks / 'PROCESS'}")
    git(repo, "config", "filter.evil.required", "true")
    (repo / "app.py").write_text("print('changed')\n")


def test_user_repository_programs_do_not_run_with_the_safe_git_command(repo: Path, tmp_path: Path) -> None:
    _hostile_user_repo(repo, tmp_path)
    user = open_git(repo)
    assert user is not None
    overrides = driver_overrides(user)
    for args in (["status", "--porcelain"], ["diff", *DIFF_SAFE_FLAGS], ["add", "-A"], ["ls-files"], ["rev-parse", "--show-toplevel"]):
        out = run_git(args, repo=user, config=overrides)
        assert out.returncode == 0, (args, out.stderr)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.isupper()) == []
    subprocess.run(["git", "status", "--porcelain"], cwd=repo, env=git_env(), capture_output=True, check=False)
    assert (tmp_path / "USER_FSMONITOR").exists() or (tmp_path / "PROCESS").exists() or (tmp_path / "CLEAN").exists()


def test_checkpoints_in_a_hostile_user_repository_run_nothing(repo: Path, tmp_path: Path) -> None:
    _hostile_user_repo(repo, tmp_path)
    cps = Checkpoints(repo)
    commit = cps.snapshot("s1", 1, 0)
    (repo / "app.py").write_text("print('agent edit')\n")
    cps.mark_turn_end("s1", 1, ["app.py"])
    assert commit and cps.shadow.resolve(commit) == commit
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.isupper()) == []
    # the shadow stores the bytes on disk, not what a filter would make of them
    entry = cps.shadow.tree_entries(cps.shadow.resolve("refs/ctxagent/s1/1/post") or "")["app.py"]
    assert cps.shadow.blob(entry.sha) == b"print('agent edit')\n"
    assert (repo / ".ctxagent" / ".gitignore").exists()  # made by the one state-dir function
