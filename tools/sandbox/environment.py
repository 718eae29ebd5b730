"""The environment a command gets: an allowlist, whatever the sandbox mode.

Only these names pass: the basics (PATH, HOME, USER, LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TERM,
TZ, TMPDIR, CI), the toolchains' own locations (virtualenv/conda, pyenv, PYTHONPATH, cargo/rustup,
go, Java/Gradle/Maven, node, .NET, Ruby, C compilers and pkg-config, LD_LIBRARY_PATH), proxy and
CA-bundle settings, and the names the user adds in the policy. Everything else, the API keys
first, stays out: the runner's children never see ctxagent's own environment.

A name or value that looks like a credential is dropped even when its name is allowed or the user
added it: the rule is `context/floor/secret_shapes.py`'s `credential_shaped` (a credential's name —
MYSQL_PWD, NPM_CONFIG__AUTH, SENTRY_DSN —, a value the log would redact, alone or as `NAME=value` —
GitLab `glpat-` tokens, Azure `AccountKey=`, `Basic <base64>` —, or a URL with a user part). Not
passed on purpose: BASH_ENV and ENV (bash would source them), LD_PRELOAD, GIT_* (GIT_DIR,
GIT_CONFIG_* redirect git), XDG_RUNTIME_DIR (its sockets are hidden in the sandbox anyway). A name the
user adds (`sandbox_env`) that would run code the command line does not show (context/floor/
program_env.py: LD_PRELOAD, BASH_ENV, PYTHONSTARTUP, …) never passes: the config refuses it.

LD_LIBRARY_PATH keeps only its absolute entries: an empty or relative one names the current
directory — the repository — for every program's loader.

The launcher (bwrap) is started with `launcher_env`: this environment without any name that rule
refuses (LD_LIBRARY_PATH, HOME, GIT_PAGER, …), which reach the command inside the sandbox instead
(tools/sandbox/launch.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ctxagent.context.floor.program_env import why_refused
from ctxagent.context.floor.secret_shapes import credential_shaped

BASICS = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR", "CI")
TOOLCHAIN = (
    "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYENV_ROOT", "PYENV_VERSION", "PYTHONPATH",
    "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "GOPATH", "GOROOT", "GOFLAGS", "GOPROXY",
    "JAVA_HOME", "GRADLE_USER_HOME", "MAVEN_HOME", "M2_HOME", "NODE_PATH", "NVM_DIR", "DOTNET_ROOT",
    "GEM_HOME", "GEM_PATH", "RBENV_ROOT", "CC", "CXX", "PKG_CONFIG_PATH", "LD_LIBRARY_PATH",
    "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
)
NETWORK = (
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
)
ALLOWED = frozenset(BASICS + TOOLCHAIN + NETWORK)
ALLOWED_PREFIXES = ("LC_",)
# Non-interactive: no pagers, no colour codes, no credential prompts that would hang until timeout.
FIXED = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "TERM": "dumb", "NO_COLOR": "1"}

_VALID_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def secret_shaped(name: str, value: str) -> bool:
    """True when `name` or `value` looks like a credential (secret_shapes' rule)."""
    return credential_shaped(name, value)


def allowed_name(name: str, additions: Iterable[str] = ()) -> bool:
    return name in ALLOWED or name.startswith(ALLOWED_PREFIXES) or name in set(additions)


def command_env(source: Mapping[str, str], additions: Iterable[str] = (),
                extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allowlisted part of `source`, the fixed non-interactive settings, then `extra` (the
    runner's own settings; they are checked like everything else)."""
    adds = {a for a in additions if _VALID_NAME.fullmatch(a) and why_refused(a) is None}
    env = {k: v for k, v in source.items() if allowed_name(k, adds) and "\x00" not in v and not secret_shaped(k, v)}
    if "LD_LIBRARY_PATH" in env:
        kept = ":".join(p for p in env["LD_LIBRARY_PATH"].split(":") if p.startswith("/"))
        if kept:
            env["LD_LIBRARY_PATH"] = kept
        else:
            del env["LD_LIBRARY_PATH"]
    env.update(FIXED)
    for k, v in (extra or {}).items():
        if not secret_shaped(k, v):
            env[k] = v
    return env


def launcher_env(env: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """`env` split in two: what a launcher (bwrap) may be started with, and the names the config rule
    refuses (loader, shell, git and start-up variables), which only the command inside may get."""
    launcher = {k: v for k, v in env.items() if why_refused(k) is None}
    return launcher, {k: v for k, v in env.items() if k not in launcher}


def dropped(source: Mapping[str, str], additions: Iterable[str] = ()) -> list[str]:
    """Names of allowed or added variables that were dropped as secret-shaped (for doctor)."""
    adds = set(additions)
    return sorted(k for k, v in source.items() if allowed_name(k, adds) and secret_shaped(k, v))
