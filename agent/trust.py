"""Which repositories the user trusts to set security-relevant config, and what an untrusted one may not set.

A repository's `.ctxagent/config.toml` is untrusted input: a cloned repository could ship one
(git refuses nothing) that turns permissions off, points the API at another server (and so hands
it the key), or names a program to run. Such keys (`SENSITIVE_KEYS`, and a model of a provider
whose spec gives an `untrusted_reason`, such as `scripted:`) are
ignored from the repository layer unless the user trusted that repository — like other agents'
trusted-folder prompt. Values that can only make ctxagent do less (`permission_mode = "ask"`,
`summary_model = "none"`, `sandbox = "read-only"`) apply anyway. The user's own config file, the
environment and flags are always trusted.

Some values are never taken from a repository, trusted or not (`USER_ONLY`): `sandbox = "off"`,
`sandbox_network = true`, `sandbox_unix_sockets = true` and extra `sandbox_writable` paths take away the sandbox every command runs
in, and trusting a repository is about its settings, not about giving the commands a model chooses
your whole machine. They come only from the user's own config or a flag (`--sandbox off`,
`--sandbox-network`). A repository's `sandbox_hidden` only adds to the hidden paths (agent/config.py).

The trust list is `trusted_repos.json` in the user state dir (`CTXAGENT_HOME` or the platform's),
keyed by the repository's resolved path, written atomically and private (0600). It also records
repositories the user declined, so the app asks once (again only when the repository starts
setting a key it did not set when asked).

API for the app (the "ask once" prompt) and the CLI:

    cfg = load_config(root, flags)               # cfg.ignored_keys: list[IgnoredKey]
    if needs_prompt(root, cfg.ignored_keys):     # something was ignored, and not asked before
        text = describe_ignored(cfg.ignored_keys)   # what would change, one line per key
        ... ask ...
        trust_repo(root) and reload the config, or decline(root, cfg.ignored_keys)
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxagent.agent.providers import specs
from ctxagent.context.errors import ConfigError
from ctxagent.context.floor.display import show_controls
from ctxagent.context.floor.state_paths import describe_os_error, user_config_dir, user_state_dir

try:
    import fcntl
except ImportError:  # not on POSIX: writes are still atomic, only not serialised
    fcntl = None  # type: ignore[assignment]  # the module's name bound to None: callers test `fcntl is not None`

TRUST_FILE = "trusted_repos.json"

# Keys a repository's own config may set only once the user trusted it, and why.
SENSITIVE_KEYS: dict[str, str] = {
    "permission_mode": "changes what the agent may do without asking you",
    "base_url": "sends your API key and code to another server",
    **{s.base_url_field: f"sends your {s.title} API key and code to another server"
       for s in specs.providers() if s.base_url_field},
    **{s.key_field: "runs your requests on an account the repository chose" for s in specs.providers() if s.key_field},
    "test_command": "names a program ctxagent would run",
    "hooks": "names programs ctxagent would run on events (tool calls, prompts, the end of a turn)",
    "shell_timeout": "changes how long commands may run",
    "summary_model": "sends the conversation to a model the repository chose",
    "sandbox": "changes what commands may write",
    "sandbox_network": "changes whether commands reach the network",
    "sandbox_env": "passes more of your environment to commands",
    "sandbox_writable": "lets commands write outside the repository",
    "sandbox_hidden": "changes which of your files commands see (a repository's list only adds to them)",
    "sandbox_unix_sockets": "lets commands reach the Unix sockets of your machine (docker's is root on it)",
    "mcp_servers": "starts programs, or connects to servers, the repository chose (MCP); their tools run on your yes",
}
# Values that can only make ctxagent do less: applied from any repository (compared with their type:
# `sandbox_network = 0` is not `false`).
HARMLESS_VALUES: dict[str, tuple[object, ...]] = {
    "permission_mode": ("ask", "plan"), "summary_model": ("none",),
    "sandbox": ("workspace-write", "read-only"), "sandbox_network": (False,), "sandbox_writable": ([],),
    "sandbox_unix_sockets": (False,),
    "hooks": ({},),
}
# Values no repository sets, trusted or not: they take the sandbox away, so they come only from the
# user's own config file or a flag. (key, is this such a value, why.)
USER_ONLY: tuple[tuple[str, Callable[[object], bool], str], ...] = (
    ("sandbox", lambda v: v == "off",
     'sandbox = "off" runs commands unsandboxed; only your own config or --sandbox off can turn the sandbox off'),
    ("sandbox_network", lambda v: v is True,
     "gives commands the network; only your own config or --sandbox-network can"),
    ("sandbox_unix_sockets", lambda v: v is True,
     "lets commands reach your machine's Unix sockets (docker's, an SSH agent's); only your own config can"),
    ("sandbox_writable", lambda v: isinstance(v, list) and v != [],
     "lets commands write outside the repository; only your own config can"),
)


def user_only_server_keys(servers: Mapping[str, Any], source: str) -> tuple[dict[str, Any], list[IgnoredKey]]:
    """A repository's MCP servers without the keys that lift a safeguard — asking before each call
    (`ask`, `allow_tools`) and the sandbox a local server runs in (`sandbox`) — which only the user's
    own config may set (agent/mcp/config.py USER_ONLY_SERVER_KEYS), and those keys as ignored."""
    from ctxagent.agent.mcp.config import USER_ONLY_SERVER_KEYS

    kept: dict[str, Any] = {}
    ignored: list[IgnoredKey] = []
    for name, spec in servers.items():
        if not isinstance(spec, dict):
            kept[name] = spec  # validation names the file and the key
            continue
        kept[name] = {k: v for k, v in spec.items() if k not in USER_ONLY_SERVER_KEYS}
        ignored += [IgnoredKey(f"mcp_servers.{name}.{k}", source, "lifts the questions or the sandbox of an MCP "
                               "server; only your own config can", user_only=True)
                    for k in spec if k in USER_ONLY_SERVER_KEYS]
    return kept, ignored


def harmless(key: str, value: object) -> bool:
    return any(type(value) is type(h) and value == h for h in HARMLESS_VALUES.get(key, ()))


def user_only(key: str, value: object) -> str | None:
    """Why no repository may set `key` to `value` (None: a repository may, once trusted)."""
    return next((why for k, test, why in USER_ONLY if k == key and test(value)), None)


@dataclass(frozen=True)
class IgnoredKey:
    """A repository config key that was not applied: the key, its file, and why. `user_only`: a value
    that trusting the repository does not apply either (USER_ONLY)."""

    key: str
    source: str
    reason: str
    user_only: bool = False

    def line(self) -> str:
        return f"{self.key}: {self.reason}"


def _key(root: str | os.PathLike[str]) -> str:
    return str(Path(root).resolve())


def _path() -> Path:
    return user_state_dir() / TRUST_FILE


def _read() -> dict[str, Any]:
    """The trust file's data; a missing or damaged file trusts nothing (the safe reading)."""
    try:
        data = json.loads(_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"version": 1, "trusted": {}, "declined": {}}
    if not isinstance(data, dict):
        data = {}
    trusted = data.get("trusted") if isinstance(data.get("trusted"), dict) else {}
    declined = data.get("declined") if isinstance(data.get("declined"), dict) else {}
    return {"version": 1, "trusted": trusted, "declined": declined}


def _update(change: Any) -> None:
    """Read-modify-write the trust file under a lock, atomically, private to the user."""
    path = _path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".lock"), "a+b") as lock:
            if fcntl is not None:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            data = _read()
            change(data)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".trust-")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:  # mkstemp makes it 0600
                    json.dump(data, fh, ensure_ascii=False, indent=1, sort_keys=True)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
    except OSError as exc:
        raise ConfigError(f"cannot write the trust list {path}: {describe_os_error(exc)}") from exc


def is_trusted(root: str | os.PathLike[str]) -> bool:
    """True when the user trusted the repository at `root` (its resolved path)."""
    return _key(root) in _read()["trusted"]


def trust_repo(root: str | os.PathLike[str]) -> Path:
    """Trust the repository at `root`: its config's security-relevant keys apply from now on."""
    key = _key(root)

    def change(data: dict[str, Any]) -> None:
        data["trusted"][key] = {"since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        data["declined"].pop(key, None)

    _update(change)
    return Path(key)


def revoke(root: str | os.PathLike[str]) -> bool:
    """Stop trusting the repository at `root`; False when it was not trusted."""
    key = _key(root)
    was = key in _read()["trusted"]

    def change(data: dict[str, Any]) -> None:
        data["trusted"].pop(key, None)
        data["declined"].pop(key, None)

    _update(change)
    return was


def trusted_repos() -> list[Path]:
    return sorted(Path(k) for k in _read()["trusted"])


def decline(root: str | os.PathLike[str], ignored: Iterable[IgnoredKey]) -> None:
    """Remember that the user said no for these keys, so the app does not ask again for them."""
    key, keys = _key(root), sorted({i.key for i in ignored if not i.user_only})

    def change(data: dict[str, Any]) -> None:
        data["declined"][key] = {"keys": keys, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}

    _update(change)


def needs_prompt(root: str | os.PathLike[str], ignored: Iterable[IgnoredKey]) -> bool:
    """True when keys were ignored and the user was not asked about them before (ask once)."""
    keys = {i.key for i in ignored if not i.user_only}  # trusting would not apply the others
    if not keys or is_trusted(root):
        return False
    asked = _read()["declined"].get(_key(root))
    return not (isinstance(asked, dict) and keys <= set(asked.get("keys") or []))


def split_untrusted(values: Mapping[str, Any], root: str | os.PathLike[str], source: str) -> tuple[dict[str, Any], list[IgnoredKey]]:
    """(values to apply, keys ignored) for one repository config layer; when the repository is
    trusted, everything but the USER_ONLY values applies."""
    trusted = is_trusted(root)
    kept: dict[str, Any] = {}
    ignored: list[IgnoredKey] = []
    for key, value in values.items():
        never = user_only(key, value)
        if never is not None:
            ignored.append(IgnoredKey(key, source, never, user_only=True))
            continue
        reason = None if trusted else SENSITIVE_KEYS.get(key)
        provider = specs.provider_of_model(value) if key == "model" and isinstance(value, str) else None
        if not trusted and provider is not None and provider.untrusted_reason:
            reason = provider.untrusted_reason
        if harmless(key, value):
            reason = None
        if reason is None:
            kept[key] = value
        else:
            ignored.append(IgnoredKey(key, source, reason))
    return kept, ignored


def describe_ignored(ignored: Iterable[IgnoredKey]) -> str:
    """What was ignored and how to allow it, for stderr, `ctxagent config` and the app's prompt."""
    items = [i for i in ignored if not i.user_only]
    never = [i for i in ignored if i.user_only]
    lines: list[str] = []
    if items:
        lines.append(f"ignored {_settings(items)} from {_sources(items)} (this repository is not trusted):")
        lines += [f"  - {i.line()}" for i in items]
        lines.append("If you wrote these settings or checked them, run `ctxagent trust` in the repository.")
    if never:
        lines.append(f"ignored {_settings(never)} from {_sources(never)} that no repository may set, trusted or not:")
        lines += [f"  - {i.line()}" for i in never]
        lines.append(f"To have them, put them in your own config ({show_controls(str(user_config_dir() / 'config.toml'))}) or pass the flag.")
    return "\n".join(lines)


def _settings(items: list[IgnoredKey]) -> str:
    return f"{len(items)} setting{'s' if len(items) != 1 else ''}"


def _sources(items: list[IgnoredKey]) -> str:
    return ", ".join(sorted({show_controls(i.source) for i in items}))  # a path: every character in it shown
