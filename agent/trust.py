"""Which repositories — which bytes of their files — the user trusts to set security-relevant config,
and what an untrusted one may not set.

A repository's `.ctxagent/config.toml` and `.mcp.json` (`TRUSTED_FILES`) are untrusted input: a cloned
repository could ship one (git refuses nothing) that turns permissions off, points the API at another
server (and so hands it the key), or names a program to run. Such keys (`SENSITIVE_KEYS`) are ignored from the
repository layer unless the user trusted that file's content — like other agents' trusted-folder
prompt. A model of a provider whose spec gives an `untrusted_reason` (`scripted:`, in `model`,
`summary_model` or `subagent_model`) is never taken from a repository, trusted or not: the scripted
model is for tests and the demo. Values that can only make ctxagent do less (`permission_mode = "ask"`, `summary_model =
"none"`, `sandbox = "read-only"`) apply anyway. The user's own config file, the environment and flags
are always trusted.

Trust is keyed on content, not on the path: trusting records the digest of each file's bytes as the
user saw them (context/floor/trust_store.py). When a file changes afterwards — one sandboxed command
in a trusted repository writes `.mcp.json`, a `git pull` changes the config — its security-relevant
keys are ignored again ("changed since you trusted it") until the user trusts the new bytes, and
every place that says so shows what changed: the app's trust box, `ctxagent trust`, and `-p` on
stderr (`describe_untrusted`: a bounded diff against the trusted bytes, control characters shown).
An entry written by an older ctxagent (the path alone, no digests) trusts no bytes: the user is asked
again once, shown the whole files, and trusting records them. The project's custom commands
(`.ctxagent/commands/`) are confirmed one by one the same way (agent/custom_commands.py).

Some values are never taken from a repository, trusted or not (`USER_ONLY`): `sandbox = "off"`,
`sandbox_network = true`, `sandbox_unix_sockets = true` and extra `sandbox_writable` paths take away the sandbox every command runs
in, and trusting a repository is about its settings, not about giving the commands a model chooses
your whole machine. They come only from the user's own config or a flag (`--sandbox off`,
`--sandbox-network`). A repository's `sandbox_hidden` only adds to the hidden paths (agent/config.py).

The list also records what the user declined, so the app asks once: again only when the repository
starts setting a key it did not set when asked, or when a file the user trusted before changes anew.

API for the app (the "ask once" prompt) and the CLI:

    cfg = load_config(root, flags)               # cfg.ignored_keys: list[IgnoredKey]
    seen = read_trusted_files(root)              # the bytes to show, and to trust
    if needs_prompt(root, cfg.ignored_keys, seen):
        text = describe_untrusted(root, cfg.ignored_keys, seen)   # what would change, and the files' diff
        ... ask ...
        trust_repo(root, seen) and reload the config, or decline(root, cfg.ignored_keys, seen)
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ctxagent.agent.mcp.config import MAX_MCP_JSON_BYTES, MCP_JSON
from ctxagent.agent.providers import specs
from ctxagent.context.errors import ConfigError, ToolError
from ctxagent.context.floor import trust_store as store
from ctxagent.context.floor.beneath import read_small
from ctxagent.context.floor.display import show_controls
from ctxagent.context.floor.state_paths import STATE_DIR_NAME, user_config_dir

CONFIG_FILE = f"{STATE_DIR_NAME}/config.toml"
MAX_CONFIG_BYTES = 1_000_000
# The repository files whose security-relevant keys trust unlocks, and how much of each is read.
TRUSTED_FILES: dict[str, int] = {CONFIG_FILE: MAX_CONFIG_BYTES, MCP_JSON: MAX_MCP_JSON_BYTES}
# trusted: the bytes the user trusted; untrusted: never trusted; changed: other bytes than trusted;
# unrecorded: trusted by an older ctxagent, which recorded no bytes
Verdict = Literal["trusted", "untrusted", "changed", "unrecorded"]
WHY: dict[str, str] = {
    "untrusted": "this repository is not trusted",
    "changed": "changed since you trusted this repository",
    "unrecorded": "you trusted this repository with an older ctxagent, which did not record what its files held",
}

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
    "subagent_model": "sends the conversation to a model the repository chose",
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


# The keys that name a model: one whose provider has an `untrusted_reason` (a scripted model) is never
# taken from a repository.
MODEL_KEYS = ("model", "summary_model", "subagent_model")


def user_only(key: str, value: object) -> str | None:
    """Why no repository may set `key` to `value` (None: a repository may, once trusted)."""
    if key in MODEL_KEYS and isinstance(value, str):
        provider = specs.provider_of_model(value)
        if provider is not None and provider.untrusted_reason:
            return provider.untrusted_reason
    return next((why for k, test, why in USER_ONLY if k == key and test(value)), None)


@dataclass(frozen=True)
class IgnoredKey:
    """A repository config key that was not applied: the key, its file, and why. `user_only`: a value
    that trusting the repository does not apply either (USER_ONLY). `verdict`: why the file's content
    is not trusted (WHY)."""

    key: str
    source: str
    reason: str
    user_only: bool = False
    verdict: str = "untrusted"

    def line(self) -> str:
        return f"{self.key}: {self.reason}"


# -- the files and their verdicts ----------------------------------------------------------------------

def read_trusted_files(root: str | os.PathLike[str]) -> dict[str, bytes | None]:
    """The bytes of each of TRUSTED_FILES (None: missing), read once, through the confined walk: a FIFO,
    a device or a link out of the repository in their place is a ConfigError naming the file."""
    seen: dict[str, bytes | None] = {}
    for rel, limit in TRUSTED_FILES.items():
        try:
            seen[rel] = read_small(root, rel, limit)
        except FileNotFoundError:
            seen[rel] = None
        except (OSError, ToolError) as exc:
            raise ConfigError(f"cannot read config {show_controls(str(Path(root) / rel))}: {exc}") from exc
    return seen


def verdict(root: str | os.PathLike[str], rel: str, data: bytes | None) -> Verdict:
    """Whether these bytes of `rel` are the ones the user trusted (see `Verdict`)."""
    return _verdict(store.entry("trusted", root), rel, data)


def _verdict(trusted: Mapping[str, Any] | None, rel: str, data: bytes | None) -> Verdict:
    if trusted is None:
        return "untrusted"
    files = trusted.get("files")
    if not isinstance(files, dict):
        return "unrecorded"
    return "trusted" if rel in files and files[rel] == store.digest(data) else "changed"


def is_trusted(root: str | os.PathLike[str]) -> bool:
    """True when the user trusted the repository at `root` (some bytes of it: `verdict` says which)."""
    return store.entry("trusted", root) is not None


def trust_repo(root: str | os.PathLike[str], seen: Mapping[str, bytes | None] | None = None) -> Path:
    """Trust the repository at `root` as `seen` holds it (default: as it is now, for a caller that just
    showed it): those bytes of its TRUSTED_FILES apply their security-relevant keys from now on."""
    key = store.repo_key(root)
    seen = read_trusted_files(root) if seen is None else seen
    files = {rel: store.digest(seen.get(rel)) for rel in TRUSTED_FILES}

    def change(data: dict[str, Any]) -> None:
        data["trusted"][key] = {"since": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "files": files}
        data["declined"].pop(key, None)

    store.update_list(change, keep=[b for b in seen.values() if b is not None])
    return Path(key)


def revoke(root: str | os.PathLike[str]) -> bool:
    """Stop trusting the repository at `root` (its files and its confirmed commands); False when it was not trusted."""
    key = store.repo_key(root)
    was = is_trusted(root)

    def change(data: dict[str, Any]) -> None:
        for table in store.TABLES:
            data[table].pop(key, None)

    store.update_list(change)
    return was


def trusted_repos() -> list[Path]:
    return sorted(Path(k) for k in store.read_list()["trusted"])


def decline(root: str | os.PathLike[str], ignored: Iterable[IgnoredKey], seen: Mapping[str, bytes | None] | None = None) -> None:
    """Remember that the user said no for these keys and these bytes, so the app does not ask again for them."""
    key, keys = store.repo_key(root), sorted({i.key for i in ignored if not i.user_only})
    seen = read_trusted_files(root) if seen is None else seen
    files = {rel: store.digest(seen.get(rel)) for rel in TRUSTED_FILES}

    def change(data: dict[str, Any]) -> None:
        data["declined"][key] = {"keys": keys, "files": files, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}

    store.update_list(change)


def needs_prompt(root: str | os.PathLike[str], ignored: Iterable[IgnoredKey],
                 seen: Mapping[str, bytes | None] | None = None) -> bool:
    """True when keys were ignored and the user was not asked about them before (ask once): an untrusted
    repository again only for keys it did not set when asked, a trusted one whose files changed (or an
    older ctxagent's entry) again only for bytes it was not asked about."""
    keys = {i.key for i in ignored if not i.user_only}  # trusting would not apply the others
    if not keys:
        return False
    seen = read_trusted_files(root) if seen is None else seen
    trusted = store.entry("trusted", root)
    if all(_verdict(trusted, rel, seen.get(rel)) == "trusted" for rel in TRUSTED_FILES):
        return False
    asked = store.entry("declined", root) or {}
    if asked.get("files") == {rel: store.digest(seen.get(rel)) for rel in TRUSTED_FILES}:
        return False
    return not (trusted is None and keys <= set(asked.get("keys") or []))


def split_untrusted(values: Mapping[str, Any], root: str | os.PathLike[str], source: str,
                    trust: Verdict | None = None) -> tuple[dict[str, Any], list[IgnoredKey]]:
    """(values to apply, keys ignored) for one repository config layer read from `source`; `trust`: the
    verdict on the bytes they were parsed from (default: the file at `source` as it is now). When those
    bytes are trusted, everything but the USER_ONLY values applies."""
    if trust is None:
        rel = next((r for r in TRUSTED_FILES if Path(root, r) == Path(source)), None)
        trust = verdict(root, rel, read_trusted_files(root)[rel]) if rel is not None else "untrusted"
    trusted = trust == "trusted"
    kept: dict[str, Any] = {}
    ignored: list[IgnoredKey] = []
    for key, value in values.items():
        never = user_only(key, value)
        if never is not None:
            ignored.append(IgnoredKey(key, source, never, user_only=True))
            continue
        reason = None if trusted else SENSITIVE_KEYS.get(key)
        if harmless(key, value):
            reason = None
        if reason is None:
            kept[key] = value
        else:
            ignored.append(IgnoredKey(key, source, reason, verdict=trust))
    return kept, ignored


# -- saying so -------------------------------------------------------------------------------------------

def describe_ignored(ignored: Iterable[IgnoredKey]) -> str:
    """What was ignored and how to allow it, for stderr, `ctxagent config` and the app's prompt."""
    items = [i for i in ignored if not i.user_only]
    never = [i for i in ignored if i.user_only]
    lines: list[str] = []
    for why in WHY:
        these = [i for i in items if i.verdict == why]
        if these:
            lines.append(f"ignored {_settings(these)} from {_sources(these)} ({WHY[why]}):")
            lines += [f"  - {i.line()}" for i in these]
    if items:
        lines.append("If you wrote these settings or checked them, run `ctxagent trust` in the repository "
                     "(it shows what it trusts; `ctxagent trust --show` only shows it).")
    if never:
        lines.append(f"ignored {_settings(never)} from {_sources(never)} that no repository may set, trusted or not:")
        lines += [f"  - {i.line()}" for i in never]
        lines.append(f"To have them, put them in your own config ({show_controls(str(user_config_dir() / 'config.toml'))}) or pass the flag.")
    return "\n".join(lines)


def describe_files(root: str | os.PathLike[str], seen: Mapping[str, bytes | None], first_look: bool = True) -> str:
    """Each of TRUSTED_FILES that trusting would trust anew, as the user should see it first: a diff
    against the bytes trusted before, or the whole file (bounded; control characters shown).
    `first_look=False`: not the files of a repository never trusted (`-p` names them at every run)."""
    trusted = store.entry("trusted", root)
    files = trusted.get("files") if trusted is not None else None
    parts: list[str] = []
    for rel in TRUSTED_FILES:
        data = seen.get(rel)
        state = _verdict(trusted, rel, data)
        if state == "trusted" or (state == "untrusted" and not first_look) or (data is None and not isinstance(files, dict)):
            continue
        before_digest = files.get(rel) if isinstance(files, dict) else None
        before = store.stored_content(before_digest)
        known = isinstance(files, dict) and rel in files and (before_digest is None or before is not None)
        parts.append(store.describe_change(rel, before, data, known=known))
    return "\n\n".join(parts)


def describe_untrusted(root: str | os.PathLike[str], ignored: Iterable[IgnoredKey],
                       seen: Mapping[str, bytes | None] | None = None, first_look: bool = True) -> str:
    """`describe_ignored`, then what the files hold that trusting would trust (`describe_files`)."""
    ignored = list(ignored)
    text = describe_ignored(ignored)
    if not any(not i.user_only for i in ignored):
        return text
    try:
        seen = read_trusted_files(root) if seen is None else seen
    except ConfigError as exc:
        return f"{text}\n\n({exc})"
    files = describe_files(root, seen, first_look)
    return f"{text}\n\n{files}" if files else text


def _settings(items: list[IgnoredKey]) -> str:
    return f"{len(items)} setting{'s' if len(items) != 1 else ''}"


def _sources(items: list[IgnoredKey]) -> str:
    return ", ".join(sorted({show_controls(i.source) for i in items}))  # a path: every character in it shown
