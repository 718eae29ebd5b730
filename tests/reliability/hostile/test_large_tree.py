"""A large repository (issue 19: on 200k files a not-found read_file took 10 s, list_files 11 s,
grep 8 s). None of the tools may walk the tree needlessly. Correctness, never timing: the test
counts the file-system calls made in this process (os.scandir, os.stat, os.lstat) on a
20,000-file tree, in 2,000 folders, as a git repository and as a plain folder.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext
from ctxagent.tools.files import LIST_MAX
from ctxagent.tools.grep import STOP_AFTER, find_rg
from ctxagent.tools.listing import SUGGEST_DIRS
from ctxagent.tui.lab.bench.large_tree import build_tree

REG = make_registry()
FILES = 20_000
FOLDERS = FILES // 10


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("tree")
    return {kind: build_tree(base / kind, FILES, per_dir=10, git=kind == "git") for kind in ("git", "plain")}


@pytest.fixture
def count(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    calls: Counter[str] = Counter()

    def counting(name: str) -> Callable[..., Any]:
        real = getattr(os, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)
        return wrapper
    for name in ("scandir", "stat", "lstat"):
        monkeypatch.setattr(os, name, counting(name))
    yield calls


@pytest.mark.parametrize("kind", ["git", "plain"])
@pytest.mark.parametrize("path", ["missing_module.py", "d0003/s0004/missing.py", "nowhere/at/all.py"])
def test_a_not_found_read_reads_a_bounded_number_of_folders(trees: dict[str, Path], count: Counter[str],
                                                            kind: str, path: str) -> None:
    r = REG.run("read_file", {"path": path}, ToolContext(root=trees[kind]))
    assert r.is_error and "file not found" in r.content
    assert count["scandir"] <= SUGGEST_DIRS + 4, count
    assert count["stat"] + count["lstat"] < FILES / 10, count  # not one per file (there are 20,000)


def test_a_not_found_read_still_suggests_the_file_of_that_name(trees: dict[str, Path]) -> None:
    r = REG.run("read_file", {"path": "f0007.py"}, ToolContext(root=trees["git"]))
    assert r.is_error and "files with that name: d0000/s0000/f0007.py" in r.content, r.content
    r = REG.run("read_file", {"path": "d0003/s0004/f0O07.py"}, ToolContext(root=trees["plain"]))
    assert "d0003/s0004/f0007.py" in r.content, r.content


@pytest.mark.parametrize("kind", ["git", "plain"])
def test_list_files_stops_at_its_cap(trees: dict[str, Path], count: Counter[str], kind: str) -> None:
    r = REG.run("list_files", {}, ToolContext(root=trees[kind]))
    assert not r.is_error
    shown = [line for line in r.content.splitlines()[1:] if not line.startswith("[")]
    assert len(shown) == LIST_MAX and "node_modules" not in r.content
    assert count["stat"] + count["lstat"] < 500, count  # git's own view: not one stat per file
    if kind == "plain":
        assert count["scandir"] < FOLDERS / 10, count  # the walk stopped at the cap
        assert r.content.startswith(f"more than {LIST_MAX:,} files")


@pytest.mark.parametrize("engine", ["rg", "python"])
def test_grep_stops_at_its_cap(trees: dict[str, Path], count: Counter[str], engine: str) -> None:
    if engine == "rg" and find_rg() is None:
        pytest.skip("ripgrep is not installed")
    r = REG.run("grep", {"pattern": "value"}, ToolContext(root=trees["git"], config={"grep_engine": engine}))
    assert not r.is_error and r.meta["truncated"] and r.meta["matches"] == STOP_AFTER
    assert f"at least {STOP_AFTER:,} matches" in r.content
    assert count["stat"] + count["lstat"] < 8 * STOP_AFTER, count  # the files it read, not the tree's


def test_grep_finds_a_rare_word_in_the_whole_tree(trees: dict[str, Path]) -> None:
    for kind in ("git", "plain"):
        r = REG.run("grep", {"pattern": "NEEDLE_[0-9]+"}, ToolContext(root=trees[kind]))
        assert "NEEDLE_7" in r.content, r.content
