"""The shell tool and the command runner it shares with run_tests.

A command runs as `bash -c` in the repository root, in a new session (its own process group), with
stdin from /dev/null. Output is read in chunks as it arrives and only a head and a tail are kept
(8 MiB together by default), so a command printing 100 MB never sits in memory whole; the bytes in
between are counted. The cap is generous on purpose: the agent loop spills a large result to disk
(after removing secrets) and shows the model a preview plus a handle for read_spill, so what is
kept here stays retrievable. Lines longer than MAX_LINE_CHARS are cut: a megabyte-long line helps
nobody and is pathological for tokenizers. On
timeout, cancellation, or a runaway output volume the whole process group gets SIGTERM, then
SIGKILL.

The command runs under the sandbox policy in `ctx.config["sandbox"]` (tools/sandbox/: bubblewrap,
workspace-write by default; `bash -c` is then started by bwrap, and killing bwrap's process group
ends the whole sandbox, since its PID namespace dies with it). Its environment is an allowlist in
every mode (tools/sandbox/environment.py), so `env` shows no API key. When the sandbox cannot run,
the command is refused with a message naming the setting that turns it off.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxagent.context.errors import ToolError
from ctxagent.tools.confine import repo_root
from ctxagent.tools.contract import FunctionTool, ToolArgs, ToolContext, ToolResult
from ctxagent.tools.sandbox.launch import prepare_launch
from ctxagent.tools.sandbox.policy import DEFAULT_POLICY, SandboxPolicy, policy_of
from pydantic import Field

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 600.0
OUTPUT_BYTES = 8 * 1024 * 1024  # head + tail kept in memory (ctx.config["shell_output_bytes"] overrides)
MAX_LINE_CHARS = 4000
MAX_TOTAL_BYTES = 256 * 1024 * 1024  # past this much output the command is stopped: it is not converging
KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL
DRAIN_GRACE = 1.0  # seconds to wait for EOF after the main process exits (background children hold the pipe)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]")


@dataclass
class CommandOutcome:
    exit_code: int | None  # None when the process was killed by us
    output: str  # head + marker + tail, cleaned of terminal escapes
    timed_out: bool = False
    cancelled: bool = False
    runaway: bool = False  # stopped because it printed more than MAX_TOTAL_BYTES
    dropped_bytes: int = 0
    total_bytes: int = 0
    duration: float = 0.0
    background_killed: bool = False


def clean_output(text: str, max_line_chars: int = MAX_LINE_CHARS) -> str:
    """Strip terminal escapes, collapse carriage-return progress bars to their final state, cut very long lines."""
    text = _ANSI.sub("", text)
    if "\r" not in text and len(text) <= max_line_chars:
        return text
    lines = []
    for line in text.split("\n"):
        if "\r" in line:
            parts = [p for p in line.rstrip("\r").split("\r") if p]
            line = parts[-1] if parts else ""
        if len(line) > max_line_chars:
            line = line[:max_line_chars] + f" [... line truncated: {len(line) - max_line_chars:,} more characters]"
        lines.append(line)
    return "\n".join(lines)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, KILL_GRACE), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:  # the leader is gone; make sure its children are too
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        return


def run_command(
    command: str,
    cwd: Path,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    cancel: threading.Event | None = None,
    output_bytes: int = OUTPUT_BYTES,
    on_chunk: Callable[[bytes], None] | None = None,
    env: dict[str, str] | None = None,
    policy: SandboxPolicy = DEFAULT_POLICY,
) -> CommandOutcome:
    """Run `bash -c command` in `cwd` (the repository root) under `policy`; keeps at most
    `output_bytes` of output (a quarter head, the rest tail). `env` adds variables (still checked
    for secrets). Raises SandboxUnavailableError (a ToolError) when the sandbox cannot run."""
    launch = prepare_launch(command, cwd, policy, env)
    started = time.monotonic()
    try:
        try:
            proc = subprocess.Popen(launch.argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True, env=launch.env,
                                    pass_fds=launch.pass_fds)
        except OSError as exc:
            raise ToolError(f"could not start {launch.argv[0]}: {exc}") from exc
        finally:
            launch.close_fds()
        outcome = _collect(proc, started, timeout, cancel, output_bytes, on_chunk)
    finally:
        notes = launch.finish()  # what the sandbox moved aside after the command: the model and the user see it
    if notes:
        outcome.output = outcome.output.rstrip("\n") + "\n" + "\n".join(notes) + "\n"
    return outcome


def _collect(proc: subprocess.Popen[bytes], started: float, timeout: float, cancel: threading.Event | None,
             output_bytes: int, on_chunk: Callable[[bytes], None] | None) -> CommandOutcome:
    """Read the output until EOF or a stop, keep head + tail, and see the process (group) end."""
    head_bytes = max(output_bytes // 4, 1)
    tail_bytes = max(output_bytes - head_bytes, 1)
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    head = bytearray()
    tail: deque[bytes] = deque()  # whole chunks, trimmed from the left: no quadratic memmove
    tail_len = 0
    dropped = total = 0
    timed_out = cancelled = runaway = bg_killed = False
    exited_at: float | None = None
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    try:
        while True:
            now = time.monotonic()
            if now - started > timeout:
                timed_out = True
            elif cancel is not None and cancel.is_set():
                cancelled = True
            elif total > MAX_TOTAL_BYTES:
                runaway = True
            if timed_out or cancelled or runaway:
                _kill_group(proc)
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > DRAIN_GRACE:
                bg_killed = True  # background children still hold the pipe; they die with the command
                _kill_group(proc)
                break
            if not sel.select(timeout=0.05):
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                break
            total += len(chunk)
            if on_chunk is not None:
                on_chunk(chunk)
            room = head_bytes - len(head)
            if room > 0:
                head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                tail.append(chunk)
                tail_len += len(chunk)
                while tail_len - len(tail[0]) >= tail_bytes:
                    gone = tail.popleft()
                    tail_len -= len(gone)
                    dropped += len(gone)
    finally:
        sel.close()
        proc.stdout.close()
    # The output ended (EOF) but the process may still run, e.g. after closing its stdout: it gets
    # the same deadline and cancellation as before.
    exit_code: int | None = proc.poll()
    while exit_code is None and not (timed_out or cancelled or runaway):
        if time.monotonic() - started > timeout:
            timed_out = True
        elif cancel is not None and cancel.is_set():
            cancelled = True
        else:
            try:
                exit_code = proc.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                continue
            break
        _kill_group(proc)
    if timed_out or cancelled or runaway:
        exit_code = None
    text = head.decode("utf-8", "replace")
    tail_bytes_kept = b"".join(tail)
    if len(tail_bytes_kept) > tail_bytes:
        dropped_here = len(tail_bytes_kept) - tail_bytes
        tail_bytes_kept = tail_bytes_kept[dropped_here:]
        dropped += dropped_here
    if dropped:
        text += f"\n[... {dropped:,} bytes of output omitted ...]\n"
    text += tail_bytes_kept.decode("utf-8", "replace")
    return CommandOutcome(exit_code, clean_output(text), timed_out, cancelled, runaway, dropped, total,
                          time.monotonic() - started, bg_killed)


def describe_outcome(out: CommandOutcome, timeout: float) -> str:
    """One line saying how the command ended."""
    if out.timed_out:
        return f"timed out after {timeout:g} s; the process group was killed"
    if out.cancelled:
        return "cancelled; the process group was killed"
    if out.runaway:
        return f"stopped after {out.total_bytes:,} bytes of output; the process group was killed"
    line = f"exit code {out.exit_code}"
    if out.exit_code is not None and out.exit_code < 0:
        line += f" (killed by signal {-out.exit_code})"
    if out.exit_code == 127:
        line += " (command not found)"
    if out.background_killed:
        line += "; background processes still holding the output were killed"
    return line


def output_limit(ctx: ToolContext) -> int:
    value = ctx.config.get("shell_output_bytes")
    return int(value) if isinstance(value, int) and value > 0 else OUTPUT_BYTES


def resolve_timeout(value: Any, default: float) -> tuple[float, str]:
    """Clamp a requested timeout into (0, MAX_TIMEOUT]; return it with a note when it was changed."""
    if value is None:
        return default, ""
    if value <= 0:
        raise ToolError(f"timeout must be a positive number of seconds (at most {MAX_TIMEOUT:g}), got {value}")
    if value > MAX_TIMEOUT:
        return MAX_TIMEOUT, f"[note: timeout {value:g} s is above the maximum; using {MAX_TIMEOUT:g} s]\n"
    return float(value), ""


class ShellArgs(ToolArgs):
    command: str = Field(description="the bash command line")
    timeout: float | None = Field(None, description=f"seconds (default {DEFAULT_TIMEOUT:g}, max {MAX_TIMEOUT:g})")


def shell(args: ShellArgs, ctx: ToolContext) -> ToolResult:
    command = args.command
    if not command.strip():
        raise ToolError("command is empty")
    if "\x00" in command:
        raise ToolError("command contains a NUL byte")
    timeout, note = resolve_timeout(args.timeout, float(ctx.config.get("shell_timeout") or DEFAULT_TIMEOUT))
    policy = policy_of(ctx.config)
    out = run_command(command, repo_root(ctx.root), timeout=timeout, cancel=ctx.cancel, output_bytes=output_limit(ctx),
                      policy=policy)
    status = describe_outcome(out, timeout)
    body = out.output if out.output.strip() else "(no output)"
    meta = {"exit_code": out.exit_code, "timed_out": out.timed_out, "cancelled": out.cancelled,
            "duration_s": round(out.duration, 3), "output_bytes": out.total_bytes, "dropped_bytes": out.dropped_bytes,
            "sandbox": policy.mode}
    failed_to_run = out.timed_out or out.cancelled or out.runaway
    return ToolResult(f"{note}{status}\n{body}", is_error=failed_to_run, meta=meta)


def shell_tools() -> list[FunctionTool[Any]]:
    return [
        FunctionTool("shell", (
            "Run a bash command in the repository root (stdin is empty; no interactive programs). "
            f"Default timeout {DEFAULT_TIMEOUT:g} s, maximum {MAX_TIMEOUT:g} s; on timeout the whole process group is killed. "
            "Long output keeps its head and tail. The result starts with the exit code."),
            ShellArgs, "command", shell),
    ]
