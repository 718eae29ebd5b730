"""How the runner starts one command: the argv, the environment and the file descriptors to pass.

With the sandbox on, the argv is `bwrap ARGS -- bash -c COMMAND`, and bwrap itself is started with
the allowlisted environment: inside the new PID namespace bwrap is PID 1 and the command's parent,
so `/proc/1/environ` and `/proc/$PPID/environ` show that environment and nothing of ctxagent's.
With the sandbox off it is `bash -c COMMAND` with the same allowlisted environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ctxagent.tools.sandbox.bwrap import arguments, find_bwrap
from ctxagent.tools.sandbox.environment import command_env
from ctxagent.tools.sandbox.persistence import Guard
from ctxagent.tools.sandbox.policy import SandboxPolicy

SANDBOX_TMP = "/tmp"
SANDBOX_CACHE = "/tmp/.cache"  # $HOME is read-only: build caches (go, pip, ...) go to the private /tmp


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...] = ()
    _guard: Guard | None = None

    def close_fds(self) -> None:
        """After the process started: the child has its copies."""
        for fd in self.pass_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.pass_fds = ()

    def finish(self) -> list[str]:
        """After the process ended: what the check after a sandboxed command did (what it moved aside
        that the command planted; tools/sandbox/persistence.py), one line each."""
        self.close_fds()
        return self._guard.finish() if self._guard is not None else []


def prepare_launch(command: str, cwd: Path, policy: SandboxPolicy, extra_env: Mapping[str, str] | None = None,
                   source_env: Mapping[str, str] | None = None, *, server: bool = False) -> Launch:
    """The launch of `bash -c command` in `cwd` (the repository root) under `policy`; `server`: a
    program that lives as long as the session (an MCP server; see tools/sandbox/persistence.py).

    Raises SandboxUnavailableError when the policy wants the sandbox and no bwrap can run."""
    source = os.environ if source_env is None else source_env
    env = command_env(source, policy.env, extra_env)
    if not policy.sandboxed:
        return Launch(["bash", "-c", command], env)
    bwrap = find_bwrap(policy)
    env["TMPDIR"] = SANDBOX_TMP
    if "XDG_CACHE_HOME" not in policy.env:
        env["XDG_CACHE_HOME"] = SANDBOX_CACHE
    fds: list[int] = []
    try:
        args, protected = arguments(policy, cwd, cwd, fds, env, server=server)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return Launch([bwrap, *args, "--", "bash", "-c", command], env, tuple(fds), protected)
