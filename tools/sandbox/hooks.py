"""Running a program the user's config names (a hook) with JSON on stdin, under the sandbox.

`run_hook(command, payload, cwd=root, policy=...)` starts `bash -c command` in `cwd` the way every
command starts (prepare_launch: bwrap with the policy, the allowlisted environment; no variable a
config names reaches the launcher, and a `sandbox_env` naming LD_PRELOAD or the like is refused, so
the hook is not run), writes the payload as UTF-8 JSON to its stdin, and returns (exit code, stdout,
stderr). It never raises:

- the sandbox cannot run, or the program cannot start: exit code NOT_RUN (126), stderr says why
  (the sandbox's refusal names the setting that turns it off);
- it runs past `timeout` seconds: its whole process group (the sandbox) is killed and the exit code
  is TIMED_OUT (124), as `timeout(1)` reports it (a timeout that is not a positive number: the default);
- it dies of a signal: 128 + the signal number, as a shell reports it;
- each of stdout and stderr keeps its first `output_bytes` bytes, then a note of how many more;
- a program that exits without reading its stdin is not an error (the rest of the payload is dropped).

A hook is on the path of a tool call, so a timed-out one gets no grace period: SIGKILL at once. Its
background children die with it (its PID namespace, or its process group when the sandbox is off).
"""

from __future__ import annotations

import json
import math
import os
import selectors
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

from ctxagent.context.errors import CtxagentError
from ctxagent.tools.sandbox.launch import prepare_launch
from ctxagent.tools.sandbox.policy import DEFAULT_POLICY, SandboxPolicy

HOOK_TIMEOUT = 60.0
HOOK_OUTPUT_BYTES = 1024 * 1024  # per stream
TIMED_OUT = 124
NOT_RUN = 126
DRAIN_GRACE = 1.0  # seconds to wait for EOF after the hook exits (its background children hold the pipes)


class HookOutcome(NamedTuple):
    exit_code: int
    stdout: str
    stderr: str


def hook_input(payload: Any) -> bytes:
    """The payload as UTF-8 JSON; lone surrogates (not UTF-8) are written as JSON escapes, and a value
    JSON does not know as its text."""
    text = json.dumps(payload, ensure_ascii=False, default=str)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(payload, ensure_ascii=True, default=str).encode("ascii")


def run_hook(command: str | Sequence[str], payload: Any, *, cwd: Path, policy: SandboxPolicy = DEFAULT_POLICY,
             timeout: float = HOOK_TIMEOUT, env: Mapping[str, str] | None = None,
             output_bytes: int = HOOK_OUTPUT_BYTES) -> HookOutcome:
    """Run the hook `command` (a shell command line, or an argv list) in `cwd` (the repository
    root) under `policy` with `payload` as JSON on stdin; `env` adds variables (checked for
    secrets like the rest). Never raises; see the module docstring for the exit codes."""
    try:
        line = command if isinstance(command, str) else shlex.join(command)
        if not line.strip() or "\x00" in line:
            return HookOutcome(NOT_RUN, "", "hook refused: its command is empty or holds a NUL byte")
        data = hook_input(payload)
        limit, cap = float(timeout), max(int(output_bytes), 1)
        if not math.isfinite(limit) or limit <= 0:
            limit = HOOK_TIMEOUT  # a hook always has a deadline
        launch = prepare_launch(line, cwd, policy, env)
    except CtxagentError as exc:  # the sandbox cannot run (it names the setting), a symlinked .git ...
        return HookOutcome(NOT_RUN, "", f"hook not run: {exc}")
    except Exception as exc:  # noqa: BLE001 - a hook never takes its caller down
        return HookOutcome(NOT_RUN, "", f"hook not run: {type(exc).__name__}: {exc}")
    try:
        try:
            proc = subprocess.Popen(launch.argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True, env=launch.env,
                                    pass_fds=launch.pass_fds)
        except Exception as exc:  # noqa: BLE001 - no bash or bwrap to start, the directory gone ...
            return HookOutcome(NOT_RUN, "", f"hook not run: could not start {launch.argv[0]}: {exc}")
        finally:
            launch.close_fds()
        try:
            return _communicate(proc, data, limit, cap)
        except Exception as exc:  # noqa: BLE001 - reading failed; _communicate has ended the process
            return HookOutcome(NOT_RUN, "", f"hook failed while running: {type(exc).__name__}: {exc}")
    finally:
        launch.finish()


def _feed(stdin: IO[bytes], data: bytes) -> None:
    try:
        stdin.write(data)
        stdin.close()
    except (BrokenPipeError, OSError, ValueError):  # it exited without reading everything: its choice
        pass


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the hook's process group: the hook, or what it left running in the background."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _communicate(proc: subprocess.Popen[bytes], data: bytes, timeout: float, cap: int) -> HookOutcome:
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    deadline = time.monotonic() + timeout
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    kept = {out_fd: bytearray(), err_fd: bytearray()}
    dropped = dict.fromkeys(kept, 0)
    exited_at: float | None = None
    sel = selectors.DefaultSelector()
    writer = threading.Thread(target=_feed, args=(proc.stdin, data), daemon=True)
    try:
        writer.start()
        for fd in kept:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map() and time.monotonic() <= deadline:
            if exited_at is None and proc.poll() is not None:
                exited_at = time.monotonic()
            if exited_at is not None and time.monotonic() - exited_at > DRAIN_GRACE:
                break  # background children still hold the pipes: they are killed below
            for key, _ in sel.select(timeout=0.05):
                try:
                    chunk = os.read(key.fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                room = max(cap - len(kept[key.fd]), 0)
                kept[key.fd] += chunk[:room]
                dropped[key.fd] += max(len(chunk) - room, 0)
        try:  # the output ended, but the hook may still run (it closed its stdout): the same deadline
            proc.wait(timeout=max(deadline - time.monotonic(), 0))
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
    finally:
        held = bool(sel.get_map())
        sel.close()
        if proc.returncode is None or held:  # still running, or background children hold the pipes
            _kill_group(proc)
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        if writer.ident is not None:  # started: it ends once the pipe is closed or broken
            writer.join(1.0)
        else:
            proc.stdin.close()
    out, err = _text(kept[out_fd], dropped[out_fd]), _text(kept[err_fd], dropped[err_fd])
    if timed_out:
        return HookOutcome(TIMED_OUT, out, err + f"\nhook timed out after {timeout:g} s; it was killed\n")
    code = proc.returncode
    return HookOutcome(128 - code if code < 0 else code, out, err)


def _text(raw: bytearray, dropped: int) -> str:
    text = bytes(raw).decode("utf-8", "replace")
    return text + (f"\n[... {dropped:,} more bytes not kept ...]\n" if dropped else "")
