"""Path confinement and the shared tool helpers, on real directories, symlinks and git repos."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from ctxagent.context.errors import PathOutsideRepoError, ToolError
from ctxagent.tools.confine import cap_text, relative, resolve_in_repo, stat_regular_file
from ctxagent.tools.contract import FunctionTool, ToolArgs, ToolContext, ToolResult
from ctxagent.tools.listing import glob_matcher, list_repo_files


@pytest.fixture()
def layout(tmp_path: Path) -> tuple[Path, Path]:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "src").mkdir(parents=True)
    outside.mkdir()
    (repo / "src" / "a.py").write_text("print(1)\n")
    (outside / "secret.txt").write_text("secret\n")
    return repo, outside


def test_relative_and_absolute_paths_inside_resolve(layout: tuple[Path, Path]) -> None:
    repo, _ = layout
    assert resolve_in_repo(repo, "src/a.py") == (repo / "src" / "a.py").resolve()
    assert resolve_in_repo(repo, str(repo / "src" / "a.py")) == (repo / "src" / "a.py").resolve()
    assert resolve_in_repo(repo, "") == repo.resolve()
    assert resolve_in_repo(repo, "./src/../src/a.py") == (repo / "src" / "a.py").resolve()
    # Out and back in again is still inside.
    assert resolve_in_repo(repo, "../repo/src/a.py") == (repo / "src" / "a.py").resolve()
    # Not yet existing files (for write_file) resolve too.
    assert resolve_in_repo(repo, "new/dir/b.py", for_write=True) == (repo / "new" / "dir" / "b.py").resolve()


@pytest.mark.parametrize("path", ["..", "../outside/secret.txt", "src/../../outside/secret.txt", "/etc/passwd", "/", "~/x", "~"])
def test_escapes_are_refused(layout: tuple[Path, Path], path: str) -> None:
    repo, _ = layout
    with pytest.raises(PathOutsideRepoError) as err:
        resolve_in_repo(repo, path)
    assert "outside the repository" in str(err.value)


def test_absolute_path_to_sibling_refused(layout: tuple[Path, Path]) -> None:
    repo, outside = layout
    with pytest.raises(PathOutsideRepoError):
        resolve_in_repo(repo, str(outside / "secret.txt"))


def test_symlinked_file_and_parent_dir_pointing_outside_refused(layout: tuple[Path, Path]) -> None:
    repo, outside = layout
    (repo / "link.txt").symlink_to(outside / "secret.txt")
    (repo / "linkdir").symlink_to(outside, target_is_directory=True)
    (repo / "dangling").symlink_to(outside / "not-yet")
    for p in ("link.txt", "linkdir/secret.txt", "linkdir/new.txt", "dangling"):
        with pytest.raises(PathOutsideRepoError) as err:
            resolve_in_repo(repo, p, for_write=True)
        assert "symbolic link" in str(err.value)


def test_symlink_inside_repo_is_allowed(layout: tuple[Path, Path]) -> None:
    repo, _ = layout
    (repo / "alias.py").symlink_to(repo / "src" / "a.py")
    assert resolve_in_repo(repo, "alias.py") == (repo / "src" / "a.py").resolve()


def test_symlink_loop_does_not_hang(layout: tuple[Path, Path]) -> None:
    repo, _ = layout
    (repo / "loop1").symlink_to(repo / "loop2")
    (repo / "loop2").symlink_to(repo / "loop1")
    try:
        p = resolve_in_repo(repo, "loop1")
    except ToolError:
        return
    with pytest.raises(ToolError):
        stat_regular_file(p, "loop1")


def test_root_given_through_a_symlink(layout: tuple[Path, Path], tmp_path: Path) -> None:
    repo, _ = layout
    alias = tmp_path / "alias"
    alias.symlink_to(repo, target_is_directory=True)
    assert resolve_in_repo(alias, "src/a.py") == (repo / "src" / "a.py").resolve()
    assert resolve_in_repo(alias, str(alias / "src" / "a.py")) == (repo / "src" / "a.py").resolve()
    assert relative(alias, resolve_in_repo(alias, "src/a.py")) == "src/a.py"


def test_nul_byte_and_non_string_refused(layout: tuple[Path, Path]) -> None:
    repo, _ = layout
    with pytest.raises(PathOutsideRepoError, match="NUL"):
        resolve_in_repo(repo, "src/a.py\x00.txt")
    with pytest.raises(ToolError, match="string"):
        resolve_in_repo(repo, 42)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", [".git/config", ".git/hooks/pre-commit", ".ctxagent/memory.db", "sub/.git/x"])
def test_writes_into_git_and_state_dirs_refused(layout: tuple[Path, Path], path: str) -> None:
    repo, _ = layout
    with pytest.raises(ToolError, match="refusing to write"):
        resolve_in_repo(repo, path, for_write=True)
    resolve_in_repo(repo, path)  # reading is fine


def test_special_files_refused(layout: tuple[Path, Path]) -> None:
    repo, _ = layout
    os.mkfifo(repo / "pipe")
    with pytest.raises(ToolError, match="named pipe"):
        stat_regular_file(repo / "pipe", "pipe")
    with pytest.raises(ToolError, match="directory"):
        stat_regular_file(repo / "src", "src")
    with pytest.raises(ToolError, match="character device"):
        stat_regular_file(Path("/dev/null"), "/dev/null")
    with pytest.raises(ToolError, match="not found"):
        stat_regular_file(repo / "nope", "nope")


def test_chinese_paths(layout: tuple[Path, Path]) -> None:
    repo, _ = layout
    (repo / "文档").mkdir()
    (repo / "文档" / "说明.md").write_text("你好\n", encoding="utf-8")
    p = resolve_in_repo(repo, "文档/说明.md")
    assert relative(repo, p) == "文档/说明.md"


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("*.py", ["a.py", "src/deep/b.py"], ["a.pyc", "src/a.txt"]),
        ("src/*.py", ["src/a.py"], ["src/deep/b.py", "a.py"]),
        ("src/**/*.py", ["src/a.py", "src/deep/b.py"], ["lib/a.py"]),
        ("**/test_*.py", ["test_x.py", "tests/unit/test_y.py"], ["tests/x_test.py"]),
        ("*.{ts,tsx}", ["a.ts", "web/b.tsx"], ["c.js"]),
        ("file?.txt", ["file1.txt"], ["file10.txt"]),
        ("[ab].txt", ["a.txt", "b.txt"], ["c.txt"]),
        ("*.md", ["文档/说明.md"], ["说明.txt"]),
        ("[", [], ["a"]),
    ],
)
def test_glob_matcher(pattern: str, yes: list[str], no: list[str]) -> None:
    match = glob_matcher(pattern)
    for p in yes:
        assert match(p), (pattern, p)
    for p in no:
        assert not match(p), (pattern, p)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_list_repo_files_respects_gitignore(layout: tuple[Path, Path]) -> None:
    repo, _ = layout
    _git(repo, "init", "-q")
    (repo / ".gitignore").write_text("build/\n*.log\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.js").write_text("x")
    (repo / "debug.log").write_text("x")
    (repo / "untracked.txt").write_text("x")
    (repo / ".ctxagent").mkdir()
    (repo / ".ctxagent" / "state.json").write_text("{}")
    files, source = list_repo_files(repo)
    assert source == "git"
    assert files == [".gitignore", "src/a.py", "untracked.txt"]
    sub, _ = list_repo_files(repo, (repo / "src").resolve())
    assert sub == ["src/a.py"]


def test_list_repo_files_walk_outside_git(layout: tuple[Path, Path]) -> None:
    repo, _ = layout
    for d in ("node_modules/pkg", ".venv/bin", ".git", "__pycache__"):
        (repo / d).mkdir(parents=True)
        (repo / d / "f").write_text("x")
    files, source = list_repo_files(repo)
    assert source == "walk"
    assert files == ["src/a.py"]


def test_cap_text_says_what_was_cut() -> None:
    text = "\n".join(f"line {i}" for i in range(1000))
    capped, cut = cap_text(text, 200, "narrow it")
    assert cut and len(capped) < 400 and "narrow it" in capped and "more characters" in capped
    same, cut = cap_text("short", 200, "x")
    assert same == "short" and not cut


def test_function_tool_turns_bad_args_and_exceptions_into_errors(tmp_path: Path) -> None:
    class BoomArgs(ToolArgs):
        n: int

    def boom(args: BoomArgs, ctx: ToolContext) -> ToolResult:
        if args.n == 1:
            raise ToolError("refused for a reason")
        raise RuntimeError("kaputt")

    tool = FunctionTool("boom", "d", BoomArgs, "read", boom)
    assert tool.schema == {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                           "additionalProperties": False}
    ctx = ToolContext(root=tmp_path)
    r = tool.run({"n": "x"}, ctx)
    assert r.is_error and r.content == "error: invalid arguments for boom: argument 'n' must be integer, got str"
    r = tool.run({"n": 1}, ctx)
    assert r.is_error and r.content == "error: refused for a reason"
    r = tool.run({"n": 2}, ctx)
    assert r.is_error and "RuntimeError: kaputt" in r.content
    r = tool.run([1], ctx)
    assert r.is_error and "JSON object" in r.content
