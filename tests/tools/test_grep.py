"""grep through ripgrep and through the Python fallback: the same answers in the same shape."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext, ToolResult
from ctxagent.tools.grep import find_rg

REG = make_registry()
ENGINES = ["rg", "python"]


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "gen.py").write_text("def load_config(): pass\n")
    (root / "src" / "config.py").write_text("import os\n\ndef load_config(path):\n    return LOAD_CONFIG\n")
    (root / "src" / "app.ts").write_text("export function loadConfig() {}\n")
    (root / "docs" / "登录.md").write_text("用户登录流程\nlogin flow\n", encoding="utf-8")
    (root / "bin.dat").write_bytes(b"\x00\x01load_config\x00")
    return root


def run(root: Path, engine: str, **args: object) -> ToolResult:
    return REG.run("grep", args, ToolContext(root=root, config={"grep_engine": engine}))


def test_rg_is_available_in_this_environment() -> None:
    assert find_rg() is not None


@pytest.mark.parametrize("engine", ENGINES)
def test_basic_match_shape_and_gitignore(repo: Path, engine: str) -> None:
    r = run(repo, engine, pattern="def load_config")
    assert not r.is_error
    assert r.content == "src/config.py:3:def load_config(path):"
    assert r.meta == {"matches": 1, "files": 1, "engine": engine, "truncated": False}


@pytest.mark.parametrize("engine", ENGINES)
def test_ignore_case_glob_and_path(repo: Path, engine: str) -> None:
    r = run(repo, engine, pattern="load_?config", ignore_case=True)
    assert r.content.split("\n") == [
        "src/app.ts:1:export function loadConfig() {}",
        "src/config.py:3:def load_config(path):",
        "src/config.py:4:    return LOAD_CONFIG",
    ]
    r = run(repo, engine, pattern="load", ignore_case=True, glob="*.ts")
    assert r.content == "src/app.ts:1:export function loadConfig() {}"
    r = run(repo, engine, pattern="import", path="src")
    assert r.content == "src/config.py:1:import os"
    r = run(repo, engine, pattern="import", path="src/config.py")
    assert r.content == "src/config.py:1:import os"


@pytest.mark.parametrize("engine", ENGINES)
def test_chinese_pattern_and_path(repo: Path, engine: str) -> None:
    r = run(repo, engine, pattern="登录")
    assert r.content == "docs/登录.md:1:用户登录流程"


@pytest.mark.parametrize("engine", ENGINES)
def test_no_match_and_invalid_regex(repo: Path, engine: str) -> None:
    r = run(repo, engine, pattern="nothing_here_xyz")
    assert not r.is_error and r.content == "no matches for 'nothing_here_xyz'" and r.meta["matches"] == 0
    r = run(repo, engine, pattern="load_config(")
    assert r.is_error and "invalid regular expression" in r.content and "Escape" in r.content
    r = run(repo, engine, pattern="")
    assert r.is_error and "empty" in r.content


@pytest.mark.parametrize("engine", ENGINES)
def test_output_capped_with_total(repo: Path, engine: str) -> None:
    (repo / "big.txt").write_text("".join(f"match {i}\n" for i in range(1500)))
    r = run(repo, engine, pattern="^match")
    lines = r.content.split("\n")
    assert len(lines) == 201 and lines[0] == "big.txt:1:match 0"
    assert "[showing 200 of 1,500 matches in 1 file; narrow with path=, glob= or a more specific pattern]" == lines[-1]
    assert r.meta["matches"] == 1500 and r.meta["truncated"] is True


@pytest.mark.parametrize("engine", ENGINES)
def test_long_line_bounded(repo: Path, engine: str) -> None:
    (repo / "one.txt").write_text("needle" + "x" * 3_000_000 + "\n")
    r = run(repo, engine, pattern="needle")
    assert not r.is_error and r.content.startswith("one.txt:1:needle") and len(r.content) < 5000


@pytest.mark.parametrize("engine", ENGINES)
def test_outside_paths_refused(repo: Path, engine: str, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("load_config\n")
    (repo / "link.txt").symlink_to(tmp_path / "outside.txt")
    r = run(repo, engine, pattern="load_config", path="..")
    assert r.is_error and "outside the repository" in r.content
    r = run(repo, engine, pattern="load_config", path="link.txt")
    assert r.is_error and "outside the repository" in r.content
    r = run(repo, engine, pattern="load_config")  # the link is not followed in a whole-repo search
    assert "outside.txt" not in r.content and "link.txt" not in r.content


def test_pattern_rg_rejects_runs_in_python(repo: Path) -> None:
    r = run(repo, "auto", pattern=r"(?<=def )load_config")
    assert not r.is_error and r.meta["engine"] == "python"
    assert r.content == "src/config.py:3:def load_config(path):"


def test_python_fallback_outside_git(tmp_path: Path) -> None:
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "x.js").write_text("needle\n")
    (tmp_path / "a.txt").write_text("needle\n")
    r = run(tmp_path, "python", pattern="needle")
    assert r.content == "a.txt:1:needle"
