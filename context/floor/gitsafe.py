"""Every git command ctxagent runs is built here, so a repository's own git settings never run a program.

A repository is untrusted input, and so is its `.git/config` (a tarball can ship one) and anything
under `.ctxagent/` (a shipped `shadow.git`). git runs programs named in config for ordinary,
read-only looking commands: `core.fsmonitor` on any index refresh (`status`, `add`, `diff`), hooks
on `update-ref` (reference-transaction) and commits, `filter.<driver>.clean/smudge/process` when it
reads file contents, textconv and external diff drivers on `diff`, the pager, `gpg.program` when a
commit is signed. `git_command` turns all of those off with `-c` options, which override every
config file; `git_env` drops inherited variables that would point git at another repository.

Attribute-driven drivers have per-driver names, so they cannot be turned off by one fixed option
(and git 2.39 has no `--attr-source`): `driver_overrides(cwd)` reads the driver names from the
config (reading config runs nothing) and returns the options that empty them. Diffs must also pass
`DIFF_SAFE_FLAGS` (an empty textconv would be an error, so `--no-textconv` is the way).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

GIT = "git"

# Highest precedence (`-c`), whatever `.git/config`, a shadow repository's config or an include says.
SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),  # an fsmonitor hook is a program run on every index refresh
    ("core.hooksPath", "/dev/null"),  # no hook at all (update-ref runs reference-transaction)
    ("core.pager", "cat"),
    ("protocol.allow", "never"),  # ctxagent never talks to a remote (ext:: would run a program)
    ("diff.external", ""),
    ("commit.gpgSign", "false"),  # gpg.program would be run by commit-tree
    ("tag.gpgSign", "false"),
    ("gc.auto", "0"),  # no background gc / maintenance spawned by our commands
    ("maintenance.auto", "false"),
    ("submodule.recurse", "false"),
)

# Add these to every diff / log / show: textconv and external diff drivers run programs.
DIFF_SAFE_FLAGS: tuple[str, ...] = ("--no-textconv", "--no-ext-diff")

# Variables that would make git operate on another repository than the one we chose (git's own
# `local_repo_env` list). The user's GIT_CONFIG_GLOBAL / _NOSYSTEM are kept: the user is trusted.
_REPO_ENV = frozenset({
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE", "GIT_COMMON_DIR", "GIT_NAMESPACE",
    "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS",
})


def safe_options(extra: Iterable[tuple[str, str]] = ()) -> list[str]:
    """`--no-pager -c k=v …` for SAFE_CONFIG followed by `extra` pairs (later pairs win)."""
    out = ["--no-pager"]
    for key, value in (*SAFE_CONFIG, *extra):
        out += ["-c", f"{key}={value}"]
    return out


def git_command(*args: str, config: Iterable[tuple[str, str]] = ()) -> list[str]:
    """The argv for `git <args>` with every program-running setting off.

    `config` adds (key, value) pairs of the caller's own (e.g. `("core.quotepath", "false")`, or
    what `driver_overrides` returned); they come after SAFE_CONFIG.
    """
    return [GIT, *safe_options(config), *args]


def git_env(overrides: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a git child: ours without repository-redirecting variables, no optional
    locks (a read-only view never rewrites the user's index), no terminal prompt, plus `overrides`."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if k not in _REPO_ENV and not k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    env.update(overrides or {})
    return env


def run_git(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    config: Iterable[tuple[str, str]] = (),
    stdin: bytes | None = None,
    timeout: float | None = 120,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git_command(*args)`; `env` adds to `git_env()`. Raises OSError / TimeoutExpired like subprocess."""
    return subprocess.run(
        git_command(*args, config=config), cwd=cwd, env=git_env(env), input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False,
    )


def driver_overrides(cwd: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """`-c` pairs that empty every filter driver configured for the repository at `cwd`.

    An empty `clean`/`smudge`/`process` is "no filter" to git, and `required=false` keeps a missing
    filter from being an error. Diff drivers are handled by DIFF_SAFE_FLAGS instead.
    """
    try:
        proc = run_git(["config", "-z", "--name-only", "--get-regexp", r"^filter\."], cwd=cwd, env=env, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    names: set[str] = set()
    for key in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        head, _, _option = key.rpartition(".")
        if head.startswith("filter.") and len(head) > len("filter."):
            names.add(head[len("filter."):])
    pairs: list[tuple[str, str]] = []
    for name in sorted(names):
        pairs += [(f"filter.{name}.{opt}", "") for opt in ("clean", "smudge", "process")]
        pairs.append((f"filter.{name}.required", "false"))
    return pairs


def toplevel(cwd: Path) -> Path | None:
    """The work tree's top-level directory containing `cwd`, or None outside a git work tree."""
    try:
        out = run_git(["rev-parse", "--show-toplevel"], cwd=cwd, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    top = out.stdout.decode("utf-8", "surrogateescape").strip()
    return Path(top).resolve() if out.returncode == 0 and top else None


def tracked_under(root: Path, rel: str) -> list[str]:
    """Paths git tracks under `rel` in the repository at `root` (empty outside a repository)."""
    try:
        out = run_git(["--literal-pathspecs", "ls-files", "-z", "--cached", "--", rel], cwd=root, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if out.returncode != 0:
        return []
    return [os.fsdecode(p) for p in out.stdout.split(b"\0") if p]
