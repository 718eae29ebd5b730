"""write_file / edit_file: durable replacement, and no temp file left behind after a kill.

The content is fsynced before the rename and the directory after it, so a power loss leaves the old
file or the new one. A SIGKILL between writing the temp file and renaming it cannot be caught: the
temp file stays, under a name the tools recognise, and the next write in that directory (or the
agent's first tool call) removes it once its process is gone — never one whose writer still runs.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from ctxagent.tools import make_registry
from ctxagent.tools.atomic_write import sweep_repository
from ctxagent.tools.contract import ToolContext

REG = make_registry()


def temp_path(target: Path, pid: int) -> Path:
    """A temporary name of a writer `pid` beside `target` (the random part as the tools draw it)."""
    return target.with_name(f".{target.name}.ctxagent-tmp-{pid}-0123456789abcdef")


def leftover_of(target: Path, pid: int) -> Path:
    found = sorted(target.parent.glob(f".{target.name}.ctxagent-tmp-{pid}-*"))
    assert len(found) == 1, found
    return found[0]


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "writes"
    (root / "pkg").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "pkg" / "a.txt").write_text("old content\n")
    return root


@pytest.mark.parametrize(("tool", "args"), [
    ("write_file", {"path": "pkg/a.txt", "content": "new content\n"}),
    ("edit_file", {"path": "pkg/a.txt", "old_text": "old", "new_text": "new"}),
])
def test_temp_file_is_fsynced_before_the_rename_and_the_directory_after(
        repo: Path, monkeypatch: pytest.MonkeyPatch, tool: str, args: dict[str, str]) -> None:
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append("fsync dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync file")
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str], **dir_fds: int) -> None:
        calls.append("rename")
        real_replace(src, dst, **dir_fds)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    r = REG.run(tool, args, ToolContext(root=repo))
    assert not r.is_error, r.content
    assert calls == ["fsync file", "rename", "fsync dir"]
    assert (repo / "pkg" / "a.txt").read_text() == "new content\n"


KILLED_WRITER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from ctxagent.tools import make_registry
    from ctxagent.tools.contract import ToolContext

    def stuck(fd):  # the temp file is written; the process dies before the rename
        print("written", flush=True)
        time.sleep(600)

    os.fsync = stuck
    make_registry().run("write_file", {"path": "pkg/a.txt", "content": "half-done\\n" * 1000}, ToolContext(root=Path(sys.argv[1])))
""")


def _kill_mid_write(repo: Path) -> int:
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(repo)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "written"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    return proc.pid


@pytest.mark.timeout(120)
def test_sigkill_mid_write_keeps_the_old_file_and_the_next_write_cleans_up(repo: Path) -> None:
    pid = _kill_mid_write(repo)
    leftover = leftover_of(repo / "pkg" / "a.txt", pid)
    assert (repo / "pkg" / "a.txt").read_text() == "old content\n"  # never half a file
    assert leftover.exists() and leftover.read_text().startswith("half-done")  # SIGKILL cannot be caught
    r = REG.run("write_file", {"path": "pkg/b.txt", "content": "b\n"}, ToolContext(root=repo))
    assert not r.is_error
    assert not leftover.exists()
    listed = REG.run("list_files", {}, ToolContext(root=repo)).content
    assert "ctxagent-tmp" not in listed


@pytest.mark.timeout(120)
def test_the_agent_sweeps_the_repository_on_its_first_tool_call(repo: Path, make_agent) -> None:
    pid = _kill_mid_write(repo)
    leftover = leftover_of(repo / "pkg" / "a.txt", pid)
    # make_agent works in its own repository: move the leftover there, in a directory nobody writes to
    agent, _, _ = make_agent([{"tool_calls": [{"name": "list_files", "arguments": {}}]}, {"text": "done"}])
    target = agent.session.root / "deep" / "dir" / leftover.name
    target.parent.mkdir(parents=True)
    leftover.rename(target)
    agent.run_turn("list the files")
    assert not target.exists()
    result = next(e for e in agent.log.events if e.kind == "tool_result")
    assert "ctxagent-tmp" not in result.data["content"]


def test_a_temp_file_whose_writer_still_runs_is_kept(repo: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        live = temp_path(repo / "pkg" / "a.txt", sleeper.pid)
        live.write_text("in progress")
        dead = temp_path(repo / "pkg" / "c.txt", 2**22 + 12345)  # above pid_max: no such process
        dead.write_text("abandoned")
        assert sweep_repository(repo) == [dead]
        assert live.exists() and not dead.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
