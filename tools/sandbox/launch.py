"""How every program ctxagent starts is launched: the argv, the environment and the file descriptors.

One construction for all of them: the shell tool and run_tests (so `!command` and the test command),
hooks (hooks.py) and MCP servers over stdio (agent/mcp/transport.py). A launcher — bwrap, or bash
when the sandbox is off — gets no input from a config or the repository:

- With the sandbox on, the argv is `bwrap ARGS --args FD -- bash -c COMMAND`. bwrap is started with
  `launcher_env` (environment.py): the allowlisted environment without the names that make a loader,
  a shell or git run something (context/floor/program_env.py). Those, and every variable a config
  gives the program (`program_env`: an MCP server's `env`), reach the command as `--setenv NAME
  VALUE` arguments read from a memfd (`--args FD`): inside the sandbox only, never in the launcher's
  own environment, and never on a command line another user's `ps` shows. The mounts are computed
  from ctxagent's own environment (HOME for the hidden paths, PATH for toolchains under /tmp), never
  from a config's. Inside the new PID namespace bwrap is PID 1 and the command's parent, so
  `/proc/1/environ` and `/proc/$PPID/environ` show the launcher's environment and nothing of ctxagent's.
- With the sandbox off it is `bash -c COMMAND`, bash found on ctxagent's own PATH (absolute entries
  only: a config's PATH, or a relative entry naming the repository, never chooses it), with the
  allowlisted environment plus `program_env`.

`program_env` is checked before anything starts, like `policy.env` (`sandbox_env`): a refused name
is a ConfigError naming the config key and the variable, whatever the sandbox mode.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ctxagent.context.errors import ConfigError
from ctxagent.context.floor.program_env import check_program_env, passthrough_problem
from ctxagent.tools.sandbox.bwrap import arguments, find_bwrap
from ctxagent.tools.sandbox.environment import command_env, launcher_env
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
                   source_env: Mapping[str, str] | None = None, *, program_env: Mapping[str, str] | None = None,
                   owner: str = "env", server: bool = False) -> Launch:
    """The launch of `bash -c command` in `cwd` (the repository root) under `policy`. `extra_env`:
    the runner's own settings (checked for secrets like the inherited ones); `program_env`: the
    variables a config gives the program, as written (a server's token is the point of it), refused
    as a whole (ConfigError naming `owner`) when one would run code (context/floor/program_env.py);
    `server`: a program that lives as long as the session (an MCP server; see tools/sandbox/persistence.py).

    Raises SandboxUnavailableError when the policy wants the sandbox and no bwrap can run."""
    program = dict(program_env or {})
    check_program_env(program, owner)
    problem = passthrough_problem(policy.env)
    if problem is not None:
        raise ConfigError(f"sandbox_env: {problem}")
    source = os.environ if source_env is None else source_env
    env = command_env(source, policy.env, extra_env)
    if not policy.sandboxed:
        shell = _bash(env.get("PATH", ""))
        return Launch([shell, "-c", command], {**env, **program})
    bwrap = find_bwrap(policy)
    env["TMPDIR"] = SANDBOX_TMP
    if "XDG_CACHE_HOME" not in policy.env:
        env["XDG_CACHE_HOME"] = SANDBOX_CACHE
    launcher, inside = launcher_env(env)
    fds: list[int] = []
    protected: Guard | None = None
    try:
        args, protected = arguments(policy, cwd, cwd, fds, env, server=server)  # ctxagent's environment, never the program's
        args += _setenv_args({**inside, **program}, fds)
    except BaseException:
        if protected is not None:
            protected.finish()  # a guard counted as running must end with the launch that failed
        for fd in fds:
            os.close(fd)
        raise
    return Launch([bwrap, *args, "--", "bash", "-c", command], launcher, tuple(fds), protected)


def _bash(path: str) -> str:
    """bash on the absolute entries of `path` (ctxagent's own PATH), else of the system's default."""
    for search in (path, os.defpath):
        found = shutil.which("bash", path=os.pathsep.join(p for p in search.split(os.pathsep) if p.startswith("/")))
        if found:
            return found
    return "/bin/bash"


def _setenv_args(env: Mapping[str, str], fds: list[int]) -> list[str]:
    """`--args FD`: a memfd holding `--setenv NAME VALUE` for each of `env` (NUL-separated, as bwrap reads it)."""
    if not env:
        return []
    if any("\x00" in k or "=" in k or "\x00" in v for k, v in env.items()):  # it would add bwrap arguments
        raise ConfigError("a variable for the command holds a NUL byte (or its name an =): not started")
    data = b"".join(b"--setenv\0" + os.fsencode(k) + b"\0" + os.fsencode(v) + b"\0" for k, v in env.items())
    fd = os.memfd_create("ctxagent-env", os.MFD_CLOEXEC)
    fds.append(fd)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return ["--args", str(fd)]
