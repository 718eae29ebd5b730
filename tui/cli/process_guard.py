"""Keep ctxagent's own memory and environment out of reach of the commands it runs.

With the sandbox on, a command runs in its own PID namespace and never sees ctxagent's process.
With it `off`, a command runs as the same user, and `/proc/<ctxagent pid>/environ` (the API keys
it was started with) and `/proc/<pid>/mem` are readable to it — redaction cannot help when the
output is `rev`-ed or folded. `protect_process()` marks the process not dumpable
(`prctl(PR_SET_DUMPABLE, 0)`, Linux): its /proc files then belong to root, so no process of the
same user can read them or attach to it, and it leaves no core dump. Children are not affected
(exec resets the flag), so the commands themselves run as before. Called first thing by the
console script (tui/entry.py); elsewhere (not Linux, no libc) it does nothing. It imports only the
standard library (tests/reliability/test_process_guard.py runs it as another user, by its path).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Any

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3


def _prctl() -> Any:  # libc's prctl, or None
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


def protect_process() -> bool:
    """Make this process not dumpable; True when it is now."""
    prctl = _prctl()
    if prctl is None:
        return False
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    return bool(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0)
