"""The shell tool with real bash processes: exit codes, timeouts, group kills, bounded output.

Commands run sandboxed (the default policy) unless a test says `OFF`: the tests that follow
process ids from inside need the host's PID namespace."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext, ToolResult
from ctxagent.tools.sandbox import SandboxPolicy
from ctxagent.tools.shell import OUTPUT_BYTES, clean_output, run_command

REG = make_registry()


def OFF(root: Path) -> ToolContext:
    """A context whose commands run unsandboxed: the runner's own process-group handling, seen from the host."""
    return ToolContext(root=root, config={"sandbox": SandboxPolicy(mode="off")})


def run(root: Path, ctx: ToolContext | None = None, **args: object) -> ToolResult:
    return REG.run("shell", args, ctx or ToolContext(root=root))


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead, only not reaped yet
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_exit_code_stderr_and_cwd(tmp_path: Path) -> None:
    r = run(tmp_path, command="pwd; echo 错误 >&2; exit 3")
    assert r.content.split("\n")[0] == "exit code 3"
    assert str(tmp_path.resolve()) in r.content and "错误" in r.content
    assert r.meta["exit_code"] == 3 and not r.is_error
    r = run(tmp_path, command="true")
    assert r.content == "exit code 0\n(no output)"


def test_stdin_is_empty(tmp_path: Path) -> None:
    r = run(tmp_path, command="cat; read -r x || echo eof")
    assert r.meta["exit_code"] == 0 and "eof" in r.content


def test_command_not_found(tmp_path: Path) -> None:
    r = run(tmp_path, command="definitely-not-a-command-xyz")
    assert r.meta["exit_code"] == 127 and "command not found" in r.content


def test_timeout_kills_the_whole_group_unsandboxed(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    r = run(tmp_path, OFF(tmp_path),
            command=f"sleep 1000 & echo $! > {pidfile}; (sleep 1000 & echo $! >> {pidfile}); sleep 1000", timeout=1)
    assert r.is_error and r.meta["timed_out"] and r.meta["exit_code"] is None
    assert r.content.startswith("timed out after 1 s; the process group was killed")
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)


def test_timeout_kills_the_whole_sandbox(tmp_path: Path, bwrap_path: str, procs_with: Callable[[str], list[int]]) -> None:
    marker = f"1000.{os.getpid()}1"  # a sleep length no other process uses: its processes are findable on the host
    r = run(tmp_path, command=f"sleep {marker} & (sleep {marker} &); setsid sleep {marker} & sleep {marker}", timeout=1)
    assert r.is_error and r.meta["timed_out"] and r.meta["exit_code"] is None
    assert r.content.startswith("timed out after 1 s; the process group was killed")
    deadline = time.monotonic() + 5
    while procs_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert procs_with(marker) == []  # the detached (setsid) one too: the PID namespace died with bwrap


def test_huge_output_is_bounded(tmp_path: Path) -> None:
    r = run(tmp_path, command="head -c 100000000 /dev/zero | tr '\\0' a; echo; echo END")
    assert r.meta["exit_code"] == 0
    assert len(r.content) < 40_000
    assert r.meta["output_bytes"] == 100_000_005  # the a-s, a newline, "END\n"
    assert r.content.rstrip().endswith("END") and "bytes of output omitted" in r.content
    assert r.meta["dropped_bytes"] == 100_000_005 - OUTPUT_BYTES  # only head + tail stayed in memory


def test_yes_piped_to_head(tmp_path: Path) -> None:
    r = run(tmp_path, command="yes | head -n 5")
    assert r.content == "exit code 0\ny\ny\ny\ny\ny\n"


def test_cancel_kills_the_group(tmp_path: Path, bwrap_path: str, procs_with: Callable[[str], list[int]]) -> None:
    marker = f"1000.{os.getpid()}2"
    ctx = ToolContext(root=tmp_path)
    threading.Timer(0.3, ctx.cancel.set).start()
    r = run(tmp_path, ctx, command=f"sleep {marker}")
    assert r.is_error and r.meta["cancelled"] and "cancelled" in r.content and r.meta["sandbox"] == "workspace-write"
    deadline = time.monotonic() + 5
    while procs_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert procs_with(marker) == []


def test_background_child_holding_the_pipe_does_not_hang(tmp_path: Path) -> None:
    r = run(tmp_path, OFF(tmp_path), command="echo started; sleep 1000 &")
    assert r.meta["exit_code"] == 0 and "started" in r.content
    assert "background processes" in r.content


def test_sandboxed_background_children_end_with_the_command(tmp_path: Path, bwrap_path: str,
                                                            procs_with: Callable[[str], list[int]]) -> None:
    marker = f"1000.{os.getpid()}3"
    r = run(tmp_path, command=f"echo started; sleep {marker} & setsid sleep {marker} > /dev/null 2>&1 &")
    assert r.meta["exit_code"] == 0 and "started" in r.content
    deadline = time.monotonic() + 5
    while procs_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert procs_with(marker) == []  # nothing a sandboxed command starts outlives it


def test_detached_background_child_is_left_alone_unsandboxed(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    r = run(tmp_path, OFF(tmp_path), command=f"sleep 30 > /dev/null 2>&1 & echo $! > {pidfile}")
    assert r.meta["exit_code"] == 0 and "background" not in r.content
    pid = int(pidfile.read_text())
    try:
        assert _alive(pid)
    finally:
        os.kill(pid, 9)


def test_timeout_argument_checks(tmp_path: Path) -> None:
    r = run(tmp_path, command="true", timeout=0)
    assert r.is_error and "positive" in r.content
    r = run(tmp_path, command="true", timeout=-3)
    assert r.is_error
    r = run(tmp_path, command="true", timeout=5000)
    assert r.content.startswith("[note: timeout 5000 s is above the maximum; using 600 s]")
    r = run(tmp_path, command="true", timeout="10")
    assert r.is_error and "must be number" in r.content
    r = run(tmp_path, command="   ")
    assert r.is_error and "empty" in r.content


@pytest.mark.parametrize("mode", ["workspace-write", "off"])
def test_api_keys_not_in_child_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value-123")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret-456")
    r = run(tmp_path, ToolContext(root=tmp_path, config={"sandbox": SandboxPolicy(mode=mode)}), command="env")  # type: ignore[arg-type]
    assert "sk-ant-secret-value-123" not in r.content and "sk-openai-secret-456" not in r.content
    assert "PATH=" in r.content


def test_terminal_noise_cleaned() -> None:
    assert clean_output("\x1b[31mred\x1b[0m ok") == "red ok"
    assert clean_output("10%\r50%\r100%\ndone") == "100%\ndone"
    assert clean_output("crlf line\r\nnext") == "crlf line\nnext"
    assert clean_output("x" * 5000 + "\nok", max_line_chars=10) == "x" * 10 + " [... line truncated: 4,990 more characters]\nok"


def test_many_lines_keep_head_and_tail(tmp_path: Path) -> None:
    ctx = ToolContext(root=tmp_path, config={"shell_output_bytes": 40_000})
    r = run(tmp_path, ctx, command="seq 1 200000")
    lines = r.content.split("\n")
    assert lines[1] == "1" and lines[-2] == "200000"
    assert "bytes of output omitted" in r.content and len(r.content) < 45_000
    assert r.meta["output_bytes"] == r.meta["dropped_bytes"] + 40_000


def test_run_command_streams_chunks(tmp_path: Path) -> None:
    seen: list[bytes] = []
    out = run_command("printf 'a\\nb\\n'", tmp_path, on_chunk=seen.append)
    assert b"".join(seen) == b"a\nb\n" and out.exit_code == 0 and out.output == "a\nb\n"


def test_process_that_closes_its_output_still_times_out(tmp_path: Path) -> None:
    r = run(tmp_path, command="echo bye; exec >&- 2>&-; sleep 1000", timeout=1)
    assert r.is_error and r.meta["timed_out"] and "bye" in r.content
