"""git_status and git_diff against real git repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext, ToolResult

REG = make_registry()


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=T", *args],
                   check=True, capture_output=True)


def run(root: Path, name: str, **args: object) -> ToolResult:
    return REG.run(name, args, ToolContext(root=root))


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.py").write_text("x = 1\ny = 2\n")
    (root / "说明.md").write_text("你好\n", encoding="utf-8")
    git(root, "add", ".")
    git(root, "commit", "-qm", "init")
    return root


def test_clean_status(repo: Path) -> None:
    r = run(repo, "git_status")
    assert r.content == "branch: main\nnothing to commit, working tree clean"
    assert r.meta == {"branch": "main", "files": []}


def test_status_modified_staged_untracked_and_chinese(repo: Path) -> None:
    (repo / "a.py").write_text("x = 10\ny = 2\n")
    (repo / "说明.md").write_text("再见\n", encoding="utf-8")
    git(repo, "add", "说明.md")
    (repo / "新文件.txt").write_text("new\n", encoding="utf-8")
    r = run(repo, "git_status")
    lines = r.content.split("\n")
    assert lines[0] == "branch: main"
    assert lines[1].startswith("3 changed (1 staged, 1 unstaged, 1 untracked)")
    assert set(lines[2:]) == {" M a.py", "M  说明.md", "?? 新文件.txt"}
    assert sorted(r.meta["files"]) == sorted(["a.py", "说明.md", "新文件.txt"])


def test_diff_against_head_with_path_and_untracked(repo: Path) -> None:
    (repo / "a.py").write_text("x = 10\ny = 2\n")
    (repo / "说明.md").write_text("再见\n", encoding="utf-8")
    git(repo, "add", "说明.md")  # staged changes are part of the diff against HEAD too
    (repo / "new.txt").write_text("n\n")
    r = run(repo, "git_diff")
    assert "-x = 1\n+x = 10" in r.content and "+再见" in r.content
    assert "untracked files (new, not in the diff; read_file them): new.txt" in r.content
    assert r.meta["files"] == ["a.py", "说明.md"] and r.meta["untracked"] == ["new.txt"]
    r = run(repo, "git_diff", path="a.py")
    assert "x = 10" in r.content and "再见" not in r.content and r.meta["files"] == ["a.py"]
    r = run(repo, "git_diff", path="..")
    assert r.is_error and "outside the repository" in r.content


def test_no_changes(repo: Path) -> None:
    r = run(repo, "git_diff")
    assert r.content == "no changes against HEAD" and not r.is_error


def test_unborn_repository(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "trunk")
    (tmp_path / "f.txt").write_text("one\n")
    git(tmp_path, "add", "f.txt")
    r = run(tmp_path, "git_status")
    assert "trunk" in r.content.split("\n")[0] and "A  f.txt" in r.content
    r = run(tmp_path, "git_diff")
    assert "+one" in r.content


def test_not_a_repository(tmp_path: Path) -> None:
    for name in ("git_status", "git_diff"):
        r = run(tmp_path, name)
        assert r.is_error and "not a git repository" in r.content


def test_hostile_repo_config_runs_nothing(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = f"touch {marker}; false"
    git(repo, "config", "core.fsmonitor", evil)
    git(repo, "config", "diff.external", evil)
    (repo / ".gitattributes").write_text("*.py diff=evil\n")
    git(repo, "config", "diff.evil.textconv", evil)
    (repo / "a.py").write_text("x = 3\n")
    assert not run(repo, "git_status").is_error
    r = run(repo, "git_diff")
    assert "+x = 3" in r.content
    assert not marker.exists()


def test_big_diff_capped(repo: Path) -> None:
    (repo / "a.py").write_text("".join(f"value_{i} = {i}\n" for i in range(20000)))
    r = run(repo, "git_diff")
    assert len(r.content) < 32_000 and "output truncated" in r.content and "path=" in r.content
