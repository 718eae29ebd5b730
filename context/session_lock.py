"""The write lock of one session log: `<id>.jsonl.lock`, an exclusive `flock` held while it is open.

Two processes appending to one log would interleave their lines and reuse each other's event ids,
so a log is locked when it is opened for writing (`SessionLog.open`, `SessionLog.create`, a pending
log's first write) and stays locked until it is closed. The lock file holds the holder's pid; a
second opener gets a HistoryError that names it — with its command line where the system shows it
(`/proc/<pid>/cmdline`), so "the TUI in the other terminal" is recognisable.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

from ctxagent.context.errors import HistoryError
from ctxagent.context.floor.display import strip_controls

try:  # POSIX; elsewhere a session is not locked (documented in doctor)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]  # the module's name bound to None: callers test `fcntl is not None`


def lock_path(log_path: Path) -> Path:
    return log_path.with_name(log_path.name + ".lock")


def acquire(log_path: Path, session_id: str) -> IO[str] | None:
    """The held lock of the log at `log_path` (close it to release), or a HistoryError naming the
    process that holds it; None where locks are not supported."""
    if fcntl is None:
        return None
    path = lock_path(log_path)
    fh = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held until the log is closed
    try:
        os.chmod(path, 0o600)
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.seek(0)
        holder = fh.read().strip()
        fh.close()
        raise HistoryError(f"session {session_id} is in use by another ctxagent process{describe_holder(holder)}; "
                           "finish or quit it first, or start a new session") from None
    fh.seek(0)
    fh.truncate()
    fh.write(str(os.getpid()))
    fh.flush()
    return fh


def describe_holder(holder: str) -> str:
    """" (pid 1234: ctxagent --continue)" from the pid the lock file holds; "" when it holds none."""
    if not holder.isdigit():
        return ""
    try:
        raw = Path(f"/proc/{holder}/cmdline").read_bytes()
    except OSError:
        return f" (pid {holder})"
    words = [w.decode("utf-8", "replace") for w in raw.split(b"\0") if w]
    if words:
        words[0] = os.path.basename(words[0])
        if words[0].startswith("python") and len(words) > 1:  # `python -m …` / a script: name the script
            words = words[1:]
            words[0] = os.path.basename(words[0])
    command = strip_controls(" ".join(words))
    if len(command) > 80:
        command = command[:79] + "…"
    return f" (pid {holder}: {command})" if command else f" (pid {holder})"
