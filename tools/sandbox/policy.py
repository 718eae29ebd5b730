"""What a sandboxed command may do: the policy the runner receives through `ToolContext.config`.

`ctx.config["sandbox"]` holds a `SandboxPolicy`; when it is absent the default applies
(`workspace-write`, no network), so a caller that forgets the policy gets the sandbox, not less.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ctxagent.context.errors import ConfigError

Mode = Literal["workspace-write", "read-only", "off"]
MODES: tuple[Mode, ...] = ("workspace-write", "read-only", "off")

# What a sandboxed command sees as empty under $HOME (read-only mounts over them). Reading the whole
# file system is what makes builds work; these are what an injected `cat` would be after: the keys
# and tokens of the usual tools, other agents' credentials and transcripts, shell histories (the
# commands a user typed hold passwords and tokens). ctxagent's own user config and state, and the
# `.ctxagent/` of its other projects, are hidden as well (tools/sandbox/bwrap.py). A user who needs
# one inside commands (ssh for `git push` with the network on) lists what to keep hidden themselves
# (`sandbox_hidden`), e.g. without "~/.ssh".
CREDENTIAL_STORES: tuple[str, ...] = (
    "~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.kube", "~/.docker",
    "~/.netrc", "~/.git-credentials", "~/.config/git/credentials", "~/.npmrc", "~/.pypirc", "~/.config/gh",
    "~/.password-store", "~/.local/share/keyrings", "~/.cargo/credentials", "~/.cargo/credentials.toml",
    "~/.pgpass", "~/.my.cnf", "~/.vault-token", "~/.cache/huggingface/token", "~/.huggingface/token",
    "~/.terraform.d/credentials.tfrc.json", "~/.config/rclone/rclone.conf", "~/.m2/settings.xml",
    "~/.m2/settings-security.xml", "~/.s3cfg", "~/.boto", "~/.env",
)
AGENT_STORES: tuple[str, ...] = (  # other coding agents' keys and transcripts
    "~/.claude/.credentials.json", "~/.claude/projects", "~/.claude/history.jsonl", "~/.claude.json",
    "~/.codex/auth.json", "~/.codex/sessions", "~/.codex/history.jsonl", "~/.gemini/oauth_creds.json",
    "~/.local/share/opencode/auth.json",
)
SHELL_HISTORIES: tuple[str, ...] = (
    "~/.bash_history", "~/.zsh_history", "~/.zhistory", "~/.histfile", "~/.sh_history",
    "~/.local/share/fish/fish_history", "~/.python_history", "~/.node_repl_history", "~/.psql_history",
    "~/.mysql_history", "~/.sqlite_history", "~/.rediscli_history",
)
HIDDEN_BY_DEFAULT: tuple[str, ...] = CREDENTIAL_STORES + AGENT_STORES + SHELL_HISTORIES


@dataclass(frozen=True)
class SandboxPolicy:
    """How commands run. `mode`: workspace-write (the repository writable, except every `.git`,
    `.ctxagent/` and what git or ctxagent would run from it: tools/sandbox/persistence.py), read-only (nothing writable but a private /tmp), off (no sandbox; the
    environment is still allowlisted). `network`: keep the host network (default: none).
    `env`: extra variable names passed through (secret-shaped ones are still dropped).
    `writable`: extra directories a command may write (e.g. "~/.cache"). `hidden`: paths shown
    empty. `bwrap`: a bwrap binary to use instead of the bundled one (then no other is tried).
    `unix_sockets`: let commands create AF_UNIX sockets (seccomp.py refuses them by default)."""

    mode: Mode = "workspace-write"
    network: bool = False
    env: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = HIDDEN_BY_DEFAULT
    bwrap: str | None = None
    unix_sockets: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"sandbox must be one of {', '.join(repr(m) for m in MODES)}, got {self.mode!r}")
        for name in ("env", "writable", "hidden"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"sandbox_{name} must be a list of strings, got {value!r}")
            object.__setattr__(self, name, tuple(value))

    @property
    def sandboxed(self) -> bool:
        return self.mode != "off"

    def describe(self) -> str:
        """One line for doctor and for messages: the mode and the network."""
        if not self.sandboxed:
            return "off (commands run unsandboxed; the environment is still allowlisted)"
        net = "network allowed" if self.network else "no network"
        where = "the repository writable except every .git, .ctxagent/ and what git or ctxagent would run from it" \
            if self.mode == "workspace-write" \
            else "nothing writable but a private /tmp"
        sockets = "; Unix sockets allowed" if self.unix_sockets else ""
        return f"{self.mode} ({where}; {net}{sockets})"

    @classmethod
    def from_config(cls, config: Any) -> SandboxPolicy:
        """The policy from an object or mapping with the config keys `sandbox`, `sandbox_network`,
        `sandbox_env`, `sandbox_writable`, `sandbox_hidden`, `sandbox_unix_sockets` (missing or None:
        the default)."""
        def get(key: str) -> Any:
            return config.get(key) if isinstance(config, Mapping) else getattr(config, key, None)

        values: dict[str, Any] = {}
        for key, attr in (("sandbox", "mode"), ("sandbox_network", "network"), ("sandbox_env", "env"),
                          ("sandbox_writable", "writable"), ("sandbox_hidden", "hidden"),
                          ("sandbox_unix_sockets", "unix_sockets")):
            value = get(key)
            if value is not None:
                values[attr] = tuple(value) if isinstance(value, list | tuple) else value
        return cls(**values)


DEFAULT_POLICY = SandboxPolicy()


def policy_of(config: Mapping[str, Any]) -> SandboxPolicy:
    """The policy in a tool context's config: `config["sandbox"]`, or the default when absent."""
    value = config.get("sandbox")
    if value is None:
        return DEFAULT_POLICY
    if isinstance(value, SandboxPolicy):
        return value
    if isinstance(value, str):
        return SandboxPolicy(mode=value)  # type: ignore[arg-type]  # checked in __post_init__
    raise ConfigError(f"config['sandbox'] must be a SandboxPolicy or a mode name, got {type(value).__name__}")


def expand(paths: Iterable[str], home: str) -> list[str]:
    """`~`-relative paths made absolute against `home`; relative ones are left out (no meaning here)."""
    out: list[str] = []
    for p in paths:
        if p == "~" or p.startswith("~/"):
            p = home.rstrip("/") + p[1:]
        if p.startswith("/"):
            out.append(p)
    return out

