"""read_file, write_file, edit_file and list_files on real files in real (git) directories."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext, ToolResult

REG = make_registry()


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.txt").write_text("alpha\nbeta\ngamma\n", encoding="utf-8")
    return root


def run(root: Path, name: str, **args: object) -> ToolResult:
    return REG.run(name, args, ToolContext(root=root))


# --- read_file ------------------------------------------------------------------------------------


def test_read_numbered_lines(repo: Path) -> None:
    r = run(repo, "read_file", path="a.txt")
    assert not r.is_error
    assert r.content == "    1\talpha\n    2\tbeta\n    3\tgamma"
    assert r.meta["total_lines"] == 3 and r.meta["files"] == ["a.txt"]


def test_read_range_and_paging_note(repo: Path) -> None:
    (repo / "many.txt").write_text("".join(f"line {i}\n" for i in range(1, 5001)))
    r = run(repo, "read_file", path="many.txt")
    lines = r.content.split("\n")
    assert lines[0] == "    1\tline 1" and lines[1999] == " 2000\tline 2000"
    assert "[showing lines 1-2000 of 5,000; continue with start_line=2001]" in r.content
    r = run(repo, "read_file", path="many.txt", start_line=4999)
    assert r.content.startswith(" 4999\tline 4999\n 5000\tline 5000")
    r = run(repo, "read_file", path="many.txt", start_line=10, end_line=12)
    assert r.content.split("\n")[:3] == ["   10\tline 10", "   11\tline 11", "   12\tline 12"]
    assert "continue" not in r.content


def test_read_argument_semantics(repo: Path) -> None:
    r = run(repo, "read_file", path="a.txt", start_line=0)
    assert r.is_error and "start_line must be >= 1" in r.content
    r = run(repo, "read_file", path="a.txt", start_line=3, end_line=2)
    assert r.is_error and "end_line (2) must be >= start_line (3)" in r.content
    r = run(repo, "read_file", path="a.txt", start_line=9)
    assert r.is_error and "past the end" in r.content and "3 lines" in r.content


def test_read_character_budget(repo: Path) -> None:
    (repo / "wide.txt").write_text(("x" * 1500 + "\n") * 1000)
    r = run(repo, "read_file", path="wide.txt")
    assert len(r.content) < 300_000
    assert "output size cap reached" in r.content and "continue with start_line=" in r.content


def test_read_huge_single_line_is_bounded(repo: Path) -> None:
    with open(repo / "one.txt", "wb") as fh:
        fh.write(b"a" * 10_000_000)
    r = run(repo, "read_file", path="one.txt")
    assert not r.is_error and len(r.content) < 3000
    assert "line truncated: 9,998,000 more characters" in r.content


def test_read_binary_described(repo: Path) -> None:
    (repo / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 10)
    r = run(repo, "read_file", path="img.png")
    assert r.is_error and "binary file (PNG image, 2,568 bytes)" in r.content
    (repo / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    r = run(repo, "read_file", path="blob.bin")
    assert r.is_error and "binary" in r.content and "300 bytes" in r.content


def test_read_invalid_utf8_and_utf16_and_chinese(repo: Path) -> None:
    (repo / "latin.txt").write_bytes("café\n".encode("latin-1"))
    r = run(repo, "read_file", path="latin.txt")
    assert not r.is_error and "caf\ufffd" in r.content and "not valid UTF-8" in r.content
    (repo / "u16.txt").write_bytes("你好\nworld\n".encode("utf-16"))
    r = run(repo, "read_file", path="u16.txt")
    assert r.content == "    1\t你好\n    2\tworld"
    (repo / "中文.md").write_text("第一行\r\n第二行\r\n", encoding="utf-8")
    r = run(repo, "read_file", path="中文.md")
    assert r.content == "    1\t第一行\n    2\t第二行"


def test_read_empty_missing_dir_fifo(repo: Path) -> None:
    (repo / "empty.txt").write_text("")
    assert "is empty" in run(repo, "read_file", path="empty.txt").content
    (repo / "pkg").mkdir()
    (repo / "pkg" / "mod.py").write_text("x = 1\n")
    r = run(repo, "read_file", path="mod.py")
    assert r.is_error and "file not found" in r.content and "pkg/mod.py" in r.content
    r = run(repo, "read_file", path="pkg")
    assert r.is_error and "directory" in r.content and "list_files" in r.content
    os.mkfifo(repo / "fifo")
    r = run(repo, "read_file", path="fifo")
    assert r.is_error and "named pipe" in r.content


# --- write_file -----------------------------------------------------------------------------------


def test_write_creates_parents_and_returns_diff(repo: Path) -> None:
    r = run(repo, "write_file", path="new/deep/f.py", content="一 = 1\nb = 2\n")
    assert not r.is_error, r.content
    assert (repo / "new" / "deep" / "f.py").read_text(encoding="utf-8") == "一 = 1\nb = 2\n"
    assert r.meta["created"] is True and r.meta["files"] == ["new/deep/f.py"]
    assert r.meta["lines"] == {"new/deep/f.py": [[1, 2]]}
    assert "--- /dev/null\n+++ b/new/deep/f.py\n@@ -0,0 +1,2 @@\n+一 = 1\n+b = 2\n" in r.content


def test_overwrite_diff_and_ranges(repo: Path) -> None:
    r = run(repo, "write_file", path="a.txt", content="alpha\nBETA\ngamma\ndelta")
    assert r.meta["created"] is False
    assert r.meta["lines"] == {"a.txt": [[2, 2], [4, 4]]}
    diff = r.meta["diff"]
    assert "-beta\n+BETA\n" in diff and "+delta\n\\ No newline at end of file\n" in diff
    r = run(repo, "write_file", path="a.txt", content="alpha\nBETA\ngamma\ndelta")
    assert "no changes" in r.content and r.meta["lines"] == {"a.txt": []}


def test_write_keeps_crlf_and_bom(repo: Path) -> None:
    (repo / "win.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    r = run(repo, "write_file", path="win.txt", content="one\nTWO\n")
    assert not r.is_error
    assert (repo / "win.txt").read_bytes() == b"\xef\xbb\xbfone\r\nTWO\r\n"


def test_write_refusals(repo: Path) -> None:
    (repo / ".git").mkdir()
    r = run(repo, "write_file", path=".git/config", content="x")
    assert r.is_error and "refusing to write into .git/" in r.content
    (repo / "d").mkdir()
    r = run(repo, "write_file", path="d", content="x")
    assert r.is_error and "directory" in r.content
    r = run(repo, "write_file", path="a.txt/child", content="x")
    assert r.is_error
    r = run(repo, "write_file", path=".", content="x")
    assert r.is_error


# --- edit_file ------------------------------------------------------------------------------------


def test_edit_unique_match(repo: Path) -> None:
    r = run(repo, "edit_file", path="a.txt", old_text="beta\n", new_text="beta\nbeta2\n")
    assert not r.is_error, r.content
    assert (repo / "a.txt").read_text() == "alpha\nbeta\nbeta2\ngamma\n"
    assert r.meta["lines"] == {"a.txt": [[2, 3]]} and r.meta["files"] == ["a.txt"] and r.meta["created"] is False
    assert "+beta2\n" in r.content and r.content.startswith("edited a.txt: replaced 1 occurrence (lines 2-3)")


def test_edit_no_match_shows_closest_lines(repo: Path) -> None:
    r = run(repo, "edit_file", path="a.txt", old_text="betta\n", new_text="x")
    assert r.is_error and "not found" in r.content and "    2\tbeta" in r.content
    assert (repo / "a.txt").read_text() == "alpha\nbeta\ngamma\n"


def test_edit_whitespace_and_line_number_hints(repo: Path) -> None:
    (repo / "f.py").write_text("def f():\n    return 1\n")
    r = run(repo, "edit_file", path="f.py", old_text="def f():\n  return 1", new_text="x")
    assert r.is_error and "matches lines 1-2 if leading/trailing whitespace is ignored" in r.content
    r = run(repo, "edit_file", path="f.py", old_text="    1\tdef f():", new_text="x")
    assert r.is_error and "line-number prefixes" in r.content


def test_edit_multiple_matches_and_replace_all(repo: Path) -> None:
    (repo / "m.txt").write_text("x = 1\ny = 2\nx = 1\nz\nx = 1\n")
    r = run(repo, "edit_file", path="m.txt", old_text="x = 1", new_text="x = 9")
    assert r.is_error and "matches 3 times" in r.content and "lines 1, 3, 5" in r.content
    r = run(repo, "edit_file", path="m.txt", old_text="x = 1", new_text="x = 9", replace_all=True)
    assert not r.is_error and r.meta["replacements"] == 3
    assert (repo / "m.txt").read_text() == "x = 9\ny = 2\nx = 9\nz\nx = 9\n"
    assert r.meta["lines"] == {"m.txt": [[1, 1], [3, 3], [5, 5]]}


def test_edit_preserves_crlf_encoding_invalid_bytes_and_mode(repo: Path) -> None:
    f = repo / "w.bat"
    f.write_bytes(b"echo \xff\r\nset A=1\r\nset B=2\r\n")
    f.chmod(0o755)
    r = run(repo, "edit_file", path="w.bat", old_text="set A=1\nset B=2", new_text="set A=3\nset B=2")
    assert not r.is_error, r.content
    assert f.read_bytes() == b"echo \xff\r\nset A=3\r\nset B=2\r\n"
    assert stat.S_IMODE(f.stat().st_mode) == 0o755
    u16 = repo / "u16.txt"
    u16.write_bytes("你好\n世界\n".encode("utf-16"))
    r = run(repo, "edit_file", path="u16.txt", old_text="世界", new_text="地球")
    assert not r.is_error
    assert u16.read_bytes() == "你好\n地球\n".encode("utf-16")


def test_edit_refusals(repo: Path) -> None:
    r = run(repo, "edit_file", path="a.txt", old_text="", new_text="x")
    assert r.is_error and "old_text is empty" in r.content
    r = run(repo, "edit_file", path="a.txt", old_text="beta", new_text="beta")
    assert r.is_error and "identical" in r.content
    r = run(repo, "edit_file", path="nope.txt", old_text="a", new_text="b")
    assert r.is_error and "not found" in r.content and "write_file" in r.content
    (repo / "b.bin").write_bytes(b"\x00\x01beta")
    r = run(repo, "edit_file", path="b.bin", old_text="beta", new_text="x")
    assert r.is_error and "binary" in r.content
    assert (repo / "b.bin").read_bytes() == b"\x00\x01beta"


# --- list_files -----------------------------------------------------------------------------------


def _git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def test_list_files_git_respects_gitignore(repo: Path) -> None:
    _git_init(repo)
    (repo / ".gitignore").write_text("dist/\n")
    (repo / "dist").mkdir()
    (repo / "dist" / "bundle.js").write_text("x")
    (repo / "src").mkdir()
    (repo / "src" / "main.py").write_text("x")
    (repo / "src" / "说明.md").write_text("x")
    r = run(repo, "list_files")
    assert r.content == "4 files in the repository:\n.gitignore\na.txt\nsrc/main.py\nsrc/说明.md"
    assert r.meta == {"count": 4, "source": "git"}
    r = run(repo, "list_files", path="src", glob="*.md")
    assert r.content.endswith("src/说明.md") and r.meta["count"] == 1
    (repo / "[id]").mkdir()  # a Next.js-style directory name is not a pathspec pattern
    (repo / "[id]" / "page.tsx").write_text("x")
    r = run(repo, "list_files", path="[id]")
    assert r.content.endswith(":\n[id]/page.tsx")
    r = run(repo, "list_files", glob="*.rs")
    assert not r.is_error and "no files" in r.content


def test_list_files_walk_and_cap(repo: Path) -> None:
    (repo / "node_modules" / "x").mkdir(parents=True)
    (repo / "node_modules" / "x" / "i.js").write_text("x")
    (repo / "many").mkdir()
    for i in range(620):
        (repo / "many" / f"f{i:04}.txt").write_text("")
    r = run(repo, "list_files")  # without git the walk stops at the cap: the total is not known, and not sought
    assert r.meta == {"count": 501, "source": "walk", "stopped_at_cap": True}
    assert r.content.startswith("more than 500 files in the repository:")
    assert "node_modules" not in r.content
    assert "[... more files not shown (the listing stopped at 500); narrow with path= or glob=]" in r.content


def test_list_files_refusals(repo: Path) -> None:
    r = run(repo, "list_files", path="..")
    assert r.is_error and "outside the repository" in r.content
    r = run(repo, "list_files", path="missing")
    assert r.is_error and "not found" in r.content
