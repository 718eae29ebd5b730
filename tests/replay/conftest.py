"""The bench data's Claude Code sessions laid out as Claude Code lays out its projects folder.

`~/.claude/projects/<cwd with every character but ASCII letters and digits made '-'>/<session>.jsonl`,
each session's subagents in `<session>/subagents/agent-*.jsonl` — copied into the test's own
folders at test time, never into the repository. The folder name is written here from Claude
Code's documented rule, not from the code under test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ctxagent.tui.lab.bench.readers import default_data_dir

BENCH = default_data_dir() / "claude-code"
needs_bench = pytest.mark.skipif(not BENCH.is_dir(), reason=f"the bench data's Claude Code sessions are not at {BENCH} "
                                                            "(set CTXAGENT_BENCH_DATA to the bench data folder)")
LONG = ("258c7280-ae70-4798-800f-63464d01a85d", "4d5611e5-241a-462a-8d15-5122611a9569")
SMALL = ("short", "subagent", "tool_heavy")

# a sitecustomize for the child: any connection off this machine fails, and is reported on stderr
NO_NETWORK = '''
import socket, sys
def _blocked(*args, **kwargs):
    sys.stderr.write("NETWORK ATTEMPT: %r\\n" % (args[1:] or args,))
    raise OSError("network blocked by the test")
_connect = socket.socket.connect
def _guard(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        _blocked(self, address)
    return _connect(self, address)
socket.socket.connect = _guard
socket.socket.connect_ex = _guard
socket.getaddrinfo = _blocked
socket.create_connection = _blocked
sys.stderr.write("network guard on\\n")
'''


def claude_folder_name(cwd: Path) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def lay_out(projects: Path, cwd: Path, sessions: tuple[str, ...] = (*LONG, *SMALL)) -> Path:
    """Copy bench sessions (with their subagents) into `projects`/<cwd's folder>/; returns that folder."""
    folder = projects / claude_folder_name(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    for name in sessions:
        shutil.copy2(BENCH / f"{name}.jsonl", folder / f"{name}.jsonl")
        if (BENCH / name).is_dir():
            shutil.copytree(BENCH / name, folder / name)
    return folder


def torn_copy(src: Path, dst: Path) -> int:
    """`src` cut in the middle of its last assistant record, as while Claude Code writes it; returns the
    number of complete lines kept."""
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    last = max(i for i, ln in enumerate(lines) if '"type":"assistant"' in ln)
    dst.write_text("".join(lines[:last]) + lines[last][: len(lines[last]) // 2], encoding="utf-8")
    return last


NEWER_RECORDS = [
    {"type": "ai-title", "title": "a record type from a newer version", "sessionId": "newer"},
    {"type": "worktree-state", "state": {"branch": "x"}},
    {"type": "assistant", "message": {"id": "msg_new_1", "model": "claude-opus-4-6", "role": "assistant",
                                      "content": [{"type": "server_tool_use", "id": "s1", "name": "web_search"},
                                                  {"type": "text", "text": "Still answered."}],
                                      "usage": [{"input_tokens": 10}]},
     "timestamp": "2026-02-10T21:20:00.000Z"},
    {"type": "system", "subtype": "compact_boundary", "compactMetadata": "pre 1000"},
    {"type": "assistant", "message": {"id": "msg_new_2", "model": "claude-opus-4-6", "role": "assistant",
                                      "content": [{"type": "text", "text": "Counted."}],
                                      "usage": {"input_tokens": "1200", "cache_read_input_tokens": {"n": 3},
                                                "cache_creation": ["5m"]}},
     "timestamp": "2026-02-10T21:21:00.000Z"},
]


def newer_copy(src: Path, dst: Path) -> None:
    """`src` with records of shapes no version of the bench's data writes, as a newer Claude Code might."""
    lines = src.read_text(encoding="utf-8").splitlines()
    extra = [json.dumps(r) for r in NEWER_RECORDS] + ["{not json at all", "[1, 2, 3]"]
    dst.write_text("\n".join(lines[:3] + extra + lines[3:]) + "\n", encoding="utf-8")


def snapshot(*roots: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under `roots`: (size, modification time), by path."""
    out: dict[str, tuple[int, int]] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                p = Path(dirpath) / name
                st = p.lstat()
                out[str(p)] = (0 if p.is_dir() else st.st_size, st.st_mtime_ns if not p.is_dir() else 0)
    return out


def child_env(home: Path, tmp: Path, site: Path, **extra: str) -> dict[str, str]:
    """The environment of a user with this HOME and TMPDIR, nothing of the test's own; no network."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(NO_NETWORK, encoding="utf-8")
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "SYSTEMROOT")}
    return {**keep, "HOME": str(home), "TMPDIR": str(tmp), "PYTHONPATH": str(site), "CTXAGENT_EMBEDDINGS": "off",
            "COLUMNS": "140", **extra}


def run_replay(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ctxagent.tui.cli", "replay", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
