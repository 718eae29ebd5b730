"""Shared by the command-running tests: is the sandbox usable here, and which host processes live."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from ctxagent.context.errors import SandboxUnavailableError
from ctxagent.tools.sandbox import DEFAULT_POLICY, find_bwrap


@pytest.fixture
def bwrap_path() -> str:
    """The bwrap commands run under; the test is skipped, saying why, only where none can run
    (e.g. a CI image without unprivileged user namespaces)."""
    try:
        return find_bwrap(DEFAULT_POLICY)
    except SandboxUnavailableError as exc:
        pytest.skip(f"bubblewrap cannot run on this machine: {exc}")


def host_processes_with(marker: str) -> list[int]:
    """PIDs (in the host's PID namespace) of live processes whose command line contains `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().decode("utf-8", "replace")
            with open(f"/proc/{entry}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(int(entry))
    return found


@pytest.fixture
def procs_with() -> Callable[[str], list[int]]:
    return host_processes_with
