"""Hostile and malformed tool input, table-driven.

Every case goes through the real ToolRegistry against a real git repository that sits next to an
"outside" directory. Each must come back as a clear tool error or a bounded result (the registry
never raises, so the loop continues), and nothing outside the repository may change.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext, ToolResult
from ctxagent.tools.shell import OUTPUT_BYTES

REG = make_registry()
BOUND = 100_000  # no result may be larger than this many characters...
# ...except command output, which keeps up to OUTPUT_BYTES (head + tail) for the loop to spill to disk.
COMMAND_BOUND = OUTPUT_BYTES + 10_000


@dataclass
class Case:
    id: str
    tool: str
    args: Any  # usually a dict; some cases send something else on purpose
    error: bool  # a clear error is expected (else a bounded, successful result)
    says: str = ""  # a phrase the model needs to see
    setup: Callable[[Path, Path], None] | None = None
    config: dict[str, Any] = field(default_factory=dict)
    check: Callable[[Path, Path, ToolResult], None] | None = None

    @property
    def bound(self) -> int:
        return COMMAND_BOUND if self.tool in ("shell", "run_tests") else BOUND


def _link(name: str, target: Callable[[Path], Path]) -> Callable[[Path, Path], None]:
    def setup(repo: Path, outside: Path) -> None:
        (repo / name).symlink_to(target(outside))
    return setup


def _file(name: str, data: bytes) -> Callable[[Path, Path], None]:
    def setup(repo: Path, outside: Path) -> None:
        (repo / name).write_bytes(data)
    return setup


def _big_line(repo: Path, outside: Path) -> None:
    with open(repo / "one_line.txt", "wb") as fh:
        fh.write(b"x" * 10_000_000)


def _fifo(repo: Path, outside: Path) -> None:
    os.mkfifo(repo / "pipe")


def _no_git(repo: Path, outside: Path) -> None:
    subprocess.run(["rm", "-rf", str(repo / ".git")], check=True)


def _unchanged(rel: str, content: bytes) -> Callable[[Path, Path, ToolResult], None]:
    def check(repo: Path, outside: Path, r: ToolResult) -> None:
        assert (repo / rel).read_bytes() == content
    return check


def _absent(rel: str) -> Callable[[Path, Path, ToolResult], None]:
    def check(repo: Path, outside: Path, r: ToolResult) -> None:
        assert not os.path.lexists(repo / rel)
    return check


TWICE = b"value = 1\nother\nvalue = 1\n"

CASES = [
    # --- malformed calls -----------------------------------------------------------------------
    Case("unknown-tool", "rm_rf", {"path": "."}, True, "unknown tool 'rm_rf'"),
    Case("args-not-object-list", "read_file", ["a.txt"], True, "must be a JSON object"),
    Case("args-not-object-string", "read_file", '{"path": "a.txt"}', True, "must be a JSON object"),
    Case("args-none", "shell", None, True, "must be a JSON object"),
    Case("missing-field", "edit_file", {"path": "a.txt", "old_text": "x"}, True, "missing required argument(s): new_text"),
    Case("unknown-field", "read_file", {"path": "a.txt", "lines": "1-3"}, True, "unknown argument(s): lines"),
    Case("wrong-type-path", "read_file", {"path": 42}, True, "'path' must be string"),
    Case("wrong-type-line-string", "read_file", {"path": "a.txt", "start_line": "1"}, True, "must be integer"),
    Case("wrong-type-line-bool", "read_file", {"path": "a.txt", "start_line": True}, True, "must be integer"),
    Case("wrong-type-line-float", "read_file", {"path": "a.txt", "end_line": 2.5}, True, "must be integer"),
    Case("negative-line", "read_file", {"path": "a.txt", "start_line": -5}, True, "start_line must be >= 1"),
    Case("wrong-type-replace-all", "edit_file", {"path": "a.txt", "old_text": "a", "new_text": "b", "replace_all": "yes"},
         True, "must be boolean"),
    Case("wrong-type-content", "write_file", {"path": "n.txt", "content": ["x"]}, True, "must be string",
         check=_absent("n.txt")),
    Case("wrong-type-timeout", "shell", {"command": "true", "timeout": "10"}, True, "must be number"),
    Case("negative-timeout", "shell", {"command": "true", "timeout": -1}, True, "positive"),
    # --- huge strings --------------------------------------------------------------------------
    Case("huge-path", "read_file", {"path": "a" * 100_000}, True, "too long"),
    Case("huge-pattern", "grep", {"pattern": "b" * 100_000}, False, "no matches"),
    Case("huge-content", "write_file", {"path": "huge.txt", "content": "y" * 20_000_000}, False, "created huge.txt"),
    Case("huge-old-text", "edit_file", {"path": "a.txt", "old_text": "z" * 1_000_000, "new_text": "q"}, True, "not found"),
    Case("huge-command-output", "shell", {"command": "head -c 100000000 /dev/zero | tr '\\0' a"}, False,
         "bytes of output omitted"),
    # --- bad content ---------------------------------------------------------------------------
    Case("binary-file", "read_file", {"path": "img.png"}, True, "binary file (PNG image",
         setup=_file("img.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(500))),
    Case("binary-edit", "edit_file", {"path": "blob.bin", "old_text": "ab", "new_text": "cd"}, True, "binary",
         setup=_file("blob.bin", b"\x00ab\x00"), check=_unchanged("blob.bin", b"\x00ab\x00")),
    Case("invalid-utf8", "read_file", {"path": "latin.txt"}, False, "not valid UTF-8",
         setup=_file("latin.txt", "naïve café\n".encode("latin-1"))),
    Case("invalid-utf8-edit-keeps-bytes", "edit_file", {"path": "latin.txt", "old_text": "second", "new_text": "2nd"},
         False, "replaced 1 occurrence", setup=_file("latin.txt", b"caf\xe9\nsecond\n"),
         check=_unchanged("latin.txt", b"caf\xe9\n2nd\n")),
    Case("ten-mb-single-line", "read_file", {"path": "one_line.txt"}, False, "line truncated", setup=_big_line),
    Case("ten-mb-single-line-grep", "grep", {"pattern": "x{5}"}, False, "one_line.txt:1:", setup=_big_line),
    Case("nul-in-path", "read_file", {"path": "a.txt\x00../../etc/passwd"}, True, "NUL byte"),
    Case("nul-in-pattern", "grep", {"pattern": "a\x00b"}, True, "NUL byte"),
    Case("invalid-regex", "grep", {"pattern": "([unclosed"}, True, "invalid regular expression"),
    Case("invalid-regex-repeat", "grep", {"pattern": "*a"}, True, "nothing to repeat"),
    # --- escapes -------------------------------------------------------------------------------
    Case("dotdot-read", "read_file", {"path": "../outside/secret.txt"}, True, "outside the repository"),
    Case("dotdot-write", "write_file", {"path": "../outside/new.txt", "content": "x"}, True, "outside the repository"),
    Case("dotdot-deep-write", "write_file", {"path": "a/b/../../../outside/secret.txt", "content": "pwned"}, True,
         "outside the repository"),
    Case("absolute-read", "read_file", {"path": "/etc/passwd"}, True, "outside the repository"),
    Case("absolute-sibling-write", "write_file", {"path": "@OUTSIDE@/secret.txt", "content": "pwned"}, True,
         "outside the repository"),
    Case("home-path", "read_file", {"path": "~/.ssh/id_rsa"}, True, "home directory"),
    Case("symlink-file-read", "read_file", {"path": "leak.txt"}, True, "symbolic link",
         setup=_link("leak.txt", lambda o: o / "secret.txt")),
    Case("symlink-file-write", "write_file", {"path": "leak.txt", "content": "pwned"}, True, "symbolic link",
         setup=_link("leak.txt", lambda o: o / "secret.txt")),
    Case("symlink-file-edit", "edit_file", {"path": "leak.txt", "old_text": "secret", "new_text": "pwned"}, True,
         "symbolic link", setup=_link("leak.txt", lambda o: o / "secret.txt")),
    Case("symlink-dir-write", "write_file", {"path": "shared/new.txt", "content": "x"}, True, "symbolic link",
         setup=_link("shared", lambda o: o)),
    Case("symlink-dir-list", "list_files", {"path": "shared"}, True, "outside the repository",
         setup=_link("shared", lambda o: o)),
    Case("symlink-grep", "grep", {"pattern": "secret", "path": "shared"}, True, "outside the repository",
         setup=_link("shared", lambda o: o)),
    Case("symlink-git-diff", "git_diff", {"path": "shared"}, True, "outside the repository",
         setup=_link("shared", lambda o: o)),
    Case("git-dir-write", "write_file", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\nrm -rf /\n"}, True,
         "refusing to write into .git/", check=_absent(".git/hooks/pre-commit")),
    Case("state-dir-edit", "write_file", {"path": ".ctxagent/config.toml", "content": "x"}, True,
         "refusing to write into .ctxagent/"),
    # --- special files and missing files ------------------------------------------------------
    Case("dev-zero-direct", "read_file", {"path": "/dev/zero"}, True, "outside the repository"),
    Case("dev-zero-symlink", "read_file", {"path": "zero"}, True, "outside the repository",
         setup=_link("zero", lambda o: Path("/dev/zero"))),
    Case("dev-urandom-symlink-grep", "grep", {"pattern": "x", "path": "rnd"}, True, "outside the repository",
         setup=_link("rnd", lambda o: Path("/dev/urandom"))),
    Case("fifo-read", "read_file", {"path": "pipe"}, True, "named pipe", setup=_fifo),
    Case("fifo-write", "write_file", {"path": "pipe", "content": "x"}, True, "named pipe", setup=_fifo),
    Case("missing-file-read", "read_file", {"path": "does/not/exist.py"}, True, "file not found"),
    Case("missing-file-edit", "edit_file", {"path": "nope.py", "old_text": "a", "new_text": "b"}, True, "not found",
         check=_absent("nope.py")),
    Case("directory-read", "read_file", {"path": "src"}, True, "is a directory"),
    Case("not-a-git-repo", "git_status", {}, True, "not a git repository", setup=_no_git),
    # --- edits that cannot apply --------------------------------------------------------------
    Case("edit-matches-twice", "edit_file", {"path": "twice.py", "old_text": "value = 1", "new_text": "value = 2"},
         True, "matches 2 times", setup=_file("twice.py", TWICE), check=_unchanged("twice.py", TWICE)),
    Case("edit-matches-never", "edit_file", {"path": "twice.py", "old_text": "valeu = 1", "new_text": "v"},
         True, "closest lines", setup=_file("twice.py", TWICE), check=_unchanged("twice.py", TWICE)),
    # --- commands that hang, fork, or flood ---------------------------------------------------
    Case("shell-hang", "shell", {"command": "sleep 1000", "timeout": 1}, True, "timed out after 1 s"),
    Case("shell-fork-children", "shell", {"command": "for i in $(seq 20); do sleep 1000 & done; wait", "timeout": 1},
         True, "process group was killed"),
    Case("shell-yes-head", "shell", {"command": "yes | head -c 30000000"}, False, "bytes of output omitted"),
    Case("shell-100mb-lines", "shell", {"command": "yes 0123456789abcdef | head -c 100000000"}, False,
         "bytes of output omitted"),
    Case("shell-reads-stdin", "shell", {"command": "cat"}, False, "exit code 0"),
    Case("tests-hang", "run_tests", {"command": "sleep 1000"}, True, "timed out", config={"test_timeout": 1}),
]


def _snapshot(root: Path) -> dict[str, tuple[str, str]]:
    """Every entry under `root`: its kind and a digest of its content (or link target)."""
    out: dict[str, tuple[str, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir", "")
            else:
                out[rel] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
    return out


@pytest.fixture()
def workspace(tmp_path: Path) -> tuple[Path, Path]:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "src").mkdir(parents=True)
    (outside / "nested").mkdir(parents=True)
    (outside / "secret.txt").write_text("secret\n")
    (outside / "nested" / "keep.py").write_text("keep = True\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("alpha\nbeta\n")
    (repo / "src" / "main.py").write_text("print('hi')\n")
    return repo, outside


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 30
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(case: Case, workspace: tuple[Path, Path]) -> None:
    repo, outside = workspace
    if case.setup:
        case.setup(repo, outside)
    args = case.args
    if isinstance(args, dict):
        args = {k: v.replace("@OUTSIDE@", str(outside)) if isinstance(v, str) else v for k, v in args.items()}
    before = _snapshot(outside)

    result = REG.run(case.tool, args, ToolContext(root=repo, config=case.config))

    assert isinstance(result, ToolResult)
    assert result.is_error is case.error, result.content[:2000]
    assert len(result.content) <= case.bound
    assert case.says in result.content, result.content[:2000]
    if case.error:
        assert result.content.startswith(("error:", "timed out", "tests: timed out"))
    assert _snapshot(outside) == before, "something outside the repository changed"
    if case.check:
        case.check(repo, outside, result)
