"""Running git in the user's repository for a read-only view, without running the repository's programs.

A repository's `.git/config` is untrusted input. `git status` and `git diff` would run a
`filter.<name>.clean` (or `.process`) program on any file whose stat info changed, a
`diff.<name>.textconv` or `.command`, the `core.fsmonitor` hook, and rewrite the index while they are
at it (which in turn fires `post-index-change`). `safe_git_env` returns the environment that turns
all of that off for one call:

- GIT_OPTIONAL_LOCKS=0: status does not refresh (write) the index;
- config given through GIT_CONFIG_COUNT (no quoting pitfalls, and it reaches child gits too):
  fsmonitor off, hooks pointed at /dev/null, no external diff, and every filter and diff driver the
  repository's config defines blanked out (read with `git config`, which runs nothing);
- no pager, no terminal prompts.

Callers add `--no-ext-diff --no-textconv` to diffs and keep submodules shallow
(`--ignore-submodules=dirty`: a submodule's own config is not read).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SAFE_CONFIG: dict[str, str] = {
    "core.fsmonitor": "false",
    "core.hooksPath": os.devnull,
    "core.quotepath": "false",  # non-ASCII names as they are, so Chinese paths stay readable
    "diff.external": "",
    "color.ui": "false",
}
_DRIVER_KEYS = {"filter": ("clean", "smudge", "process", "required"), "diff": ("textconv", "command")}


def defined_drivers(top: Path) -> list[tuple[str, str]]:
    """(section, name) of every filter and diff driver the repository's effective config defines."""
    proc = subprocess.run(["git", "-C", str(top), "config", "-z", "--get-regexp", r"^(filter|diff)\..*\..*"],
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=30,
                          env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    found: dict[tuple[str, str], None] = {}
    for entry in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        key = entry.split("\n", 1)[0]
        section, _, rest = key.partition(".")
        name, _, _var = rest.rpartition(".")
        if section in _DRIVER_KEYS and name:
            found[(section, name)] = None
    return list(found)


def safe_git_env(top: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for one read-only git call in `top` (see the module docstring)."""
    settings = dict(SAFE_CONFIG)
    try:
        drivers = defined_drivers(top)
    except (OSError, subprocess.SubprocessError):
        drivers = []
    for section, name in drivers:
        for var in _DRIVER_KEYS[section]:
            settings[f"{section}.{name}.{var}"] = "false" if var == "required" else ""
    env = dict(os.environ if base is None else base)
    start = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
    for i, (key, value) in enumerate(settings.items(), start):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    env["GIT_CONFIG_COUNT"] = str(start + len(settings))
    env.update({"GIT_OPTIONAL_LOCKS": "0", "GIT_PAGER": "cat", "PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"})
    return env
