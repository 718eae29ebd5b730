"""Effective configuration: user TOML < repo `.ctxagent/config.toml` < environment < flags.

`Config` is a pydantic model validated strictly at the edges: each layer is checked as it is
applied, so `max_steps = "ten"`, `budget = {hot = "x"}` or `memory = "no"` is an error that names
the file and the key, not a value that loads and misbehaves later.

The repository layer is untrusted (see agent/trust.py): a `.ctxagent/` the repository ships is
refused, and its security-relevant keys apply only once the user trusted the repository; the
others are listed in `Config.ignored_keys`. A repository never takes the command sandbox away
(`sandbox = "off"`, the network, extra writable paths: the user's own config or a flag only), and
its `sandbox_hidden` adds to the hidden paths. `Config.origins` records which layer set each key
(`ctxagent config`, doctor).

Keys are secrets: they live only in memory, `redacted()` is what gets printed, and the session log,
memory and spill files are written through a sanitizer that knows them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from ctxagent.agent.mcp.config import MCP_JSON, McpServerConfig, read_mcp_json
from ctxagent.agent.permissions import PERMISSION_MODES
from ctxagent.agent.providers import specs
from ctxagent.agent.trust import (
    CONFIG_FILE,
    MAX_CONFIG_BYTES,
    IgnoredKey,
    read_trusted_files,
    split_untrusted,
    user_only_server_keys,
    verdict,
)
from ctxagent.context.budget import PROFILES, SLICE_NAMES, TASK_STATE_SHARE
from ctxagent.context.errors import ConfigError, ToolError
from ctxagent.context.floor.beneath import read_small
from ctxagent.context.floor.bounded_json import toml_loads
from ctxagent.context.floor.program_env import passthrough_problem
from ctxagent.context.floor.state_paths import check_state_dir, project_state_dir, user_config_dir
from ctxagent.context.monitor import DEFAULT_THRESHOLDS
from ctxagent.context.prompt_cache import CACHE_TTLS
from ctxagent.context.strategies import STRATEGIES
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

# the sub-agents' defaults (the task tool and the tool runner take the configured values)
MAX_PARALLEL = 3  # `task` calls of one step running at once (`subagent_parallel`)
ANSWER_TOKENS = 2000  # the most of a sub-agent's answer the parent's window gets verbatim (`subagent_answer_tokens`)

# Each provider's key and base URL fields are named by its ProviderSpec (providers/specs.py); they
# are declared below because the model is static (tests/test_providers_specs.py checks they agree).
SECRET_FIELDS = tuple(s.key_field for s in specs.providers() if s.key_field)
# The command runner's modes (tools/sandbox/policy.py MODES, the one definition): written out here
# because importing tools/ would load every tool before the app's first frame; a test checks they agree.
SANDBOX_MODES = ("workspace-write", "read-only", "off")
# The events a hook may be named for (agent/hooks.py runs them).
HOOK_EVENTS = ("pre_tool", "post_tool", "user_prompt", "pre_compact", "session_start", "stop", "context_threshold")
SANDBOX_KEYS = ("sandbox", "sandbox_network", "sandbox_env", "sandbox_writable", "sandbox_hidden",
                "sandbox_unix_sockets")
# Filled in by the loader, never read from a file.
_INTERNAL_FIELDS = frozenset({"sources", "origins", "ignored_keys", "base_url_provider"})

Fraction = Annotated[float, Field(gt=0, le=1)]
# Literal over the one tuple that defines each set (a tuple subscript is the same as listing them).
# Literal over the tuples the rules live in (one place): pydantic reads them at run time, mypy cannot
SliceName = Literal[SLICE_NAMES]  # type: ignore[valid-type]
PermissionMode = Literal[PERMISSION_MODES]  # type: ignore[valid-type]
Strategy = Literal[STRATEGIES]  # type: ignore[valid-type]
SandboxMode = Literal[SANDBOX_MODES]  # type: ignore[valid-type]
HookEvent = Literal[HOOK_EVENTS]  # type: ignore[valid-type]
CacheTtl = Literal[CACHE_TTLS]  # type: ignore[valid-type]


class HookSpec(BaseModel):
    """One program run for an event (agent/hooks.py): `[[hooks.pre_tool]]` or `hooks.stop = {...}`."""

    model_config = ConfigDict(strict=True, extra="forbid")

    command: str | list[str]  # a shell line, or an argv list
    timeout: Annotated[float, Field(gt=0, le=600)] = 30.0  # seconds; then it is killed and reported
    tools: list[str] = Field(default_factory=list)  # pre_tool/post_tool: name patterns ("shell", "mcp__*"); empty: all
    at: Fraction | None = None  # context_threshold: the share of the window whose crossing fires it


def hook_list(value: Any) -> Any:
    """One table, or a list of them, per event: always a list (anything else is left for validation)."""
    return [value] if isinstance(value, dict | HookSpec) else value


class Config(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", validate_default=False)

    model: str | None = None  # "anthropic:claude-sonnet-4-5", "openai:gpt-5-mini", "scripted:PATH"
    base_url: str | None = None  # the session's own provider's URL (OpenAI-compatible servers): providers/specs.py key_url
    # The provider `base_url` is for: the one `model` names when the config is made (None: the provider
    # local servers speak). Bound once: a sub-agent, a summary, /model or a resume on another provider
    # never takes the generic URL (and so never sends it their key). Never read from a file.
    base_url_provider: str | None = None
    anthropic_api_key: str | None = None
    openai_api_key: str | None = None
    anthropic_base_url: str | None = None
    openai_base_url: str | None = None
    window: Annotated[int, Field(ge=1000)] | None = None  # overrides the registry's window
    default_window: Annotated[int, Field(ge=1000)] = 128_000  # for models the registry does not know
    max_output_tokens: Annotated[int, Field(ge=1)] | None = None  # None: the registry's max output, capped at 8192
    max_steps: Annotated[int, Field(ge=1)] = 50
    permission_mode: PermissionMode = "ask"
    strategy: Strategy = "ctxagent"
    budget_profile: str = "default"
    budget: dict[SliceName, Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=dict)  # slice fractions
    spill_tokens: Annotated[int, Field(ge=1)] = 2000
    protect_turns: Annotated[int, Field(ge=0)] = 2
    compress_at: Fraction = DEFAULT_THRESHOLDS[0]  # the breakpoints' one definition: context/monitor.py
    new_session_at: Fraction = DEFAULT_THRESHOLDS[1]
    auto_compact: bool = False
    subagent_model: str | None = None  # the `task` tool's default model; None: the session's, "cheaper": its cheaper sibling
    subagent_parallel: Annotated[int, Field(ge=1, le=8)] = MAX_PARALLEL  # `task` calls of one step running at once
    subagent_answer_tokens: Annotated[int, Field(ge=200, le=20_000)] = ANSWER_TOKENS  # of an answer kept verbatim
    task_state_share: Fraction = TASK_STATE_SHARE  # of the window at most for the verbatim task state
    # Anthropic's prompt-cache TTL: "5m" (its default) or "1h" (sent as cache_control ttl; writes cost 2×, not 1.25×)
    cache_ttl: CacheTtl = "5m"
    summary_model: str | None = None  # None: a cheaper sibling of the main model; "none": extractive only
    test_command: str | None = None
    shell_timeout: Annotated[int, Field(ge=1)] = 120
    # How commands run (shell, run_tests, !command, the test command, hooks): tools/sandbox/. `off`,
    # the network and extra writable paths come only from the user's own config or a flag (agent/trust.py).
    sandbox: SandboxMode = "workspace-write"
    sandbox_network: bool = False
    sandbox_env: list[str] = Field(default_factory=list)  # more variable names passed (secret-shaped ones never)
    sandbox_writable: list[str] = Field(default_factory=list)  # more writable directories, e.g. "~/.cache"
    sandbox_hidden: list[str] | None = None  # paths commands see empty; None: the default credential stores
    sandbox_unix_sockets: bool = False  # true: commands may open Unix sockets (docker's); the user's own config only
    memory: bool = True
    recall_k: Annotated[int, Field(ge=0)] = 8
    degrade_after_turns: Annotated[int, Field(ge=1)] = 20
    synonyms: list[list[str]] = Field(default_factory=list)  # extra memory-search groups: [["login", "auth", "登录"]]
    hooks: dict[HookEvent, list[HookSpec]] = Field(default_factory=dict)  # programs run on events (agent/hooks.py)
    # MCP servers by name (agent/mcp/config.py); a repository's (and .mcp.json's) once trusted (agent/trust.py)
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    mcp_defer_share: Annotated[float, Field(ge=0, le=1)] = 0.10  # MCP schemas past this share of the window are deferred
    sources: list[str] = Field(default_factory=list)  # which files contributed (for `ctxagent config`)
    origins: dict[str, str] = Field(default_factory=dict)  # key -> the layer that set it (absent: the default)
    ignored_keys: list[IgnoredKey] = Field(default_factory=list)  # repository keys not applied (untrusted)

    @field_validator("sandbox_env")
    @classmethod
    def _passes_no_code(cls, value: list[str]) -> list[str]:
        problem = passthrough_problem(value)  # LD_PRELOAD, BASH_ENV, …: context/floor/program_env.py
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("hooks", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return {k: hook_list(v) for k, v in value.items()} if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _bind_base_url(self) -> Config:
        """`base_url` belongs to the provider of the model it came with (providers/specs.py key_url)."""
        if self.base_url and self.base_url_provider is None:
            from ctxagent.agent.providers.registry import provider_named  # only with a base URL: its registry

            self.base_url_provider = provider_named(self.model)
        return self

    def redacted(self) -> dict[str, Any]:
        d = self.model_dump()
        for key in SECRET_FIELDS:
            if d.get(key):
                v = str(d[key])
                d[key] = f"{v[:4]}…[redacted]" if len(v) > 12 else "[redacted]"
        for server in d.get("mcp_servers", {}).values():  # a header or a server's variable may hold a token
            for table in ("headers", "env"):
                server[table] = {k: "[redacted]" for k in server.get(table) or {}}
        return d

    def secrets(self) -> list[str]:
        """What the session's sanitizer redacts: the API keys, and what the MCP servers are handed
        (header and `env` values, the bearer tokens read from their variables)."""
        found = [v for v in (getattr(self, f) for f in SECRET_FIELDS) if v]
        for server in self.mcp_servers.values():
            found += [v for v in (*server.headers.values(), *server.env.values()) if len(v) >= 8]
            token = os.environ.get(server.bearer_token_env_var) if server.bearer_token_env_var else None
            if token:
                found.append(token)
        return found


FILE_KEYS = frozenset(Config.model_fields) - _INTERNAL_FIELDS
# environment variable → config field: each provider's key and base URL, then the model
_ENV = {
    **{s.key_env: s.key_field for s in specs.providers() if s.key_env and s.key_field},
    **{s.base_url_env: s.base_url_field for s in specs.providers() if s.base_url_env and s.base_url_field},
    "CTXAGENT_MODEL": "model",
}


def _read_toml(path: Path, root: Path | None = None, raw: bytes | None = None) -> dict[str, Any]:
    """A config file's table. The repository's (`root` given) is read through the confined walk: it is
    repository content, and a FIFO, a device or a link in its place must not hang or redirect start-up.
    `raw`: the file's bytes, already read (those whose digest trust checks: agent/trust.py)."""
    try:
        if raw is None:
            raw = read_small(root, path.relative_to(root).as_posix(), MAX_CONFIG_BYTES) if root is not None \
                else path.read_bytes()
        data = toml_loads(raw.decode("utf-8"))  # bounded: a 200 kB `x = [[[…]]]` is an error, not a crash
    except FileNotFoundError:
        return {}
    except (ValueError, OSError, ToolError) as exc:  # TOMLDecodeError, TooDeepError, UnicodeDecodeError
        raise ConfigError(f"cannot read config {path}: {exc}") from exc
    unknown = sorted(k for k in data if k.replace("-", "_") not in FILE_KEYS)
    if unknown:
        raise ConfigError(f"unknown key(s) in {path}: {', '.join(unknown)}")
    return {k.replace("-", "_"): v for k, v in data.items()}


def _describe(exc: ValidationError, where: str) -> str:
    problems = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"] if p != "[key]")
        got = err.get("input")
        shown = repr(got) if not isinstance(got, (dict, list)) else type(got).__name__
        msg = err["msg"]  # lower-cased at its start only: a variable it names keeps its case
        problems.append(f"{loc}: {msg[:1].lower()}{msg[1:]} (got {shown})")
    return f"invalid config in {where}: " + "; ".join(problems)


def _apply(cfg: Config, values: dict[str, Any], where: str) -> Config:
    """`cfg` with one layer's values on top, validated; the error names `where` and the key."""
    merged = {**cfg.model_dump(), **values}
    merged.pop("base_url_provider", None)  # bound again to the model of the layers so far
    if isinstance(values.get("budget"), dict):  # slice fractions from every layer add up
        merged["budget"] = {**cfg.budget, **values["budget"]}
    if isinstance(values.get("synonyms"), list):  # so do synonym groups
        merged["synonyms"] = [*cfg.synonyms, *values["synonyms"]]
    if isinstance(values.get("hooks"), dict):  # and hooks: the user's run, then a trusted repository's
        merged["hooks"] = _merge_hooks(cfg.hooks, values["hooks"])
    if isinstance(values.get("mcp_servers"), dict):  # servers add up; a name an earlier layer defined stays its
        merged["mcp_servers"] = {**values["mcp_servers"], **merged_servers(cfg)}
    merged["ignored_keys"] = cfg.ignored_keys
    try:
        new = Config.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, where)) from None
    if new.budget_profile not in PROFILES:
        raise ConfigError(f"invalid config in {where}: budget_profile: unknown profile {new.budget_profile!r}; "
                          f"known: {', '.join(PROFILES)}")
    return new


def _merge_hooks(old: dict[str, list[HookSpec]], new: dict[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {event: [h.model_dump() for h in specs] for event, specs in old.items()}
    for event, value in new.items():
        more = hook_list(value)
        merged[event] = [*merged.get(event, []), *more] if isinstance(more, list) else more
    return merged


def load_config(root: Path | None = None, flags: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> Config:
    """Layer the sources; `flags` holds only options the user actually gave.

    A `.ctxagent/` the repository ships is refused (StateDirError, a ConfigError); the repository
    file's security-relevant keys are left out unless the repository is trusted (`ignored_keys`).
    """
    cfg = Config()
    user_file = user_config_dir() / "config.toml"
    layers: list[tuple[str, dict[str, Any]]] = [(str(user_file), _read_toml(user_file))]
    ignored: list[IgnoredKey] = []
    repo_layer = None
    if root is not None:
        check_state_dir(root)
        repo_file = project_state_dir(root) / "config.toml"
        seen = read_trusted_files(root)  # read once: what is parsed is what trust's digest is of
        raw = _read_toml(repo_file, Path(root), seen[CONFIG_FILE]) if seen[CONFIG_FILE] is not None else {}
        mcp_json = str(Path(root) / MCP_JSON)
        servers = read_mcp_json(root, seen[MCP_JSON]) if seen[MCP_JSON] is not None else {}
        json_layer, json_dropped = _servers_layer({"mcp_servers": servers}, mcp_json)
        toml_layer, toml_dropped = _servers_layer(raw, str(repo_file))
        from_json, json_ignored = split_untrusted(json_layer, root, mcp_json, verdict(root, MCP_JSON, seen[MCP_JSON]))
        values, ignored = split_untrusted(toml_layer, root, str(repo_file), verdict(root, CONFIG_FILE, seen[CONFIG_FILE]))
        ignored += json_ignored + json_dropped + toml_dropped
        if from_json.get("mcp_servers"):  # checked alone first: its errors name .mcp.json, not config.toml
            _apply(Config(), {"mcp_servers": from_json["mcp_servers"]}, mcp_json)
        if "mcp_servers" in from_json:  # the repository's config.toml wins over its .mcp.json, name by name
            values["mcp_servers"] = {**from_json["mcp_servers"], **values.get("mcp_servers", {})}
        repo_layer = str(repo_file)
        layers.append((repo_layer, values))
    environ = os.environ if env is None else env
    layers.append(("the environment", {attr: environ[var] for var, attr in _ENV.items() if environ.get(var)}))
    layers.append(("the command line", {k: v for k, v in (flags or {}).items() if v is not None}))
    for name, values in layers:
        values = {k: v for k, v in values.items() if v is not None}
        if name == repo_layer:
            values = _only_more_hidden(cfg, values)
        if values:
            cfg = _apply(cfg, values, name)
            label = {"the environment": "environment", "the command line": "flags"}.get(name, name)
            cfg.sources.append(label)
            cfg.origins.update({k: label for k in values})
    cfg.ignored_keys = ignored
    return cfg


def merged_servers(cfg: Config) -> dict[str, Any]:
    return {name: server.model_dump() for name, server in cfg.mcp_servers.items()}


def _servers_layer(values: dict[str, Any], where: str) -> tuple[dict[str, Any], list[IgnoredKey]]:
    """A repository layer's `mcp_servers` without what lifts a safeguard (the user's own config
    only: agent/trust.py), and those keys as ignored; an empty table is no key at all."""
    servers = values.get("mcp_servers")
    if servers is not None and not servers:
        return {k: v for k, v in values.items() if k != "mcp_servers"}, []
    if not isinstance(servers, dict):
        return values, []  # absent, or a wrong type that validation reports with the file and the key
    kept, dropped = user_only_server_keys(servers, where)
    return {**values, "mcp_servers": kept}, dropped


def _only_more_hidden(cfg: Config, values: dict[str, Any]) -> dict[str, Any]:
    """The repository layer's `sandbox_hidden` adds to what is hidden so far (the user's list, or
    the default one): a repository may hide more from commands, never show what the user hides."""
    extra = values.get("sandbox_hidden")
    if not isinstance(extra, list):
        return values  # absent, or a wrong type that validation reports with the file and the key
    # imported here: only a repository that sets the key pays for loading tools/
    from ctxagent.tools.sandbox.policy import HIDDEN_BY_DEFAULT

    so_far = cfg.sandbox_hidden if cfg.sandbox_hidden is not None else list(HIDDEN_BY_DEFAULT)
    return {**values, "sandbox_hidden": [*so_far, *(p for p in extra if p not in so_far)]}


def origin_of(cfg: Config, key: str) -> str:
    """Where `key`'s value came from, in words: "the default", "flags", "environment" or a file."""
    return cfg.origins.get(key, "the default")


def flags_from_args(args: Any) -> dict[str, Any]:
    """The CLI options that map onto config fields (None when the user did not give them)."""
    out: dict[str, Any] = {
        "model": getattr(args, "model", None),
        "base_url": getattr(args, "base_url", None),
        "window": getattr(args, "window", None),
        "max_steps": getattr(args, "max_steps", None),
        "strategy": getattr(args, "strategy", None),
    }
    out["permission_mode"] = getattr(args, "permission_mode", None)
    if getattr(args, "yes", False):
        out["permission_mode"] = "yolo"
    out["sandbox"] = getattr(args, "sandbox", None)
    if getattr(args, "sandbox_network", False):
        out["sandbox_network"] = True
    return out
