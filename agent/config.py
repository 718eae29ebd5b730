"""Effective configuration: user TOML < repo `.ctxagent/config.toml` < environment < flags.

Keys are secrets: they live only in memory, `redacted()` is what gets printed, and the session log,
memory and spill files are written through a sanitizer that knows them.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ctxagent.context.errors import ConfigError
from ctxagent.context.paths import project_state_dir, user_config_dir

SECRET_FIELDS = ("anthropic_api_key", "openai_api_key")
PERMISSION_MODES = ("ask", "auto-edit", "yolo")


@dataclass
class Config:
    model: str | None = None  # "anthropic:claude-sonnet-4-5", "openai:gpt-5-mini", "scripted:PATH"
    base_url: str | None = None  # overrides the provider's base URL (OpenAI-compatible servers)
    anthropic_api_key: str | None = None
    openai_api_key: str | None = None
    anthropic_base_url: str | None = None
    openai_base_url: str | None = None
    window: int | None = None  # overrides the registry's window
    default_window: int = 128_000  # for models the registry does not know
    max_output_tokens: int | None = None  # None: the registry's max output, capped at 8192
    max_steps: int = 50
    permission_mode: str = "ask"
    strategy: str = "ctxagent"  # "ctxagent" | "full" | "window"
    budget_profile: str = "default"
    budget: dict[str, float] = field(default_factory=dict)  # slice fractions overriding the profile
    spill_tokens: int = 2000
    protect_turns: int = 2
    compress_at: float = 0.75
    new_session_at: float = 0.90
    auto_compact: bool = False
    summary_model: str | None = None  # None: a cheaper sibling of the main model; "none": extractive only
    test_command: str | None = None
    shell_timeout: int = 120
    memory: bool = True
    recall_k: int = 8
    degrade_after_turns: int = 20
    synonyms: list[list[str]] = field(default_factory=list)  # extra memory-search groups: [["login", "auth", "登录"]]
    sources: list[str] = field(default_factory=list)  # which files contributed (for `ctxagent config`)

    def redacted(self) -> dict[str, Any]:
        d = asdict(self)
        for key in SECRET_FIELDS:
            if d.get(key):
                v = str(d[key])
                d[key] = f"{v[:4]}…[redacted]" if len(v) > 12 else "[redacted]"
        return d

    def secrets(self) -> list[str]:
        return [v for v in (self.anthropic_api_key, self.openai_api_key) if v]


_FIELD_NAMES = {f.name for f in fields(Config)}
_ENV = {
    "ANTHROPIC_API_KEY": "anthropic_api_key",
    "OPENAI_API_KEY": "openai_api_key",
    "ANTHROPIC_BASE_URL": "anthropic_base_url",
    "OPENAI_BASE_URL": "openai_base_url",
    "CTXAGENT_MODEL": "model",
}


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, OSError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from exc
    unknown = sorted(k for k in data if k.replace("-", "_") not in _FIELD_NAMES)
    if unknown:
        raise ConfigError(f"unknown key(s) in {path}: {', '.join(unknown)}")
    return {k.replace("-", "_"): v for k, v in data.items()}


def _apply(cfg: Config, values: dict[str, Any]) -> None:
    for key, value in values.items():
        if value is None:
            continue
        if key == "budget":
            setattr(cfg, key, {**cfg.budget, **value})
        elif key == "synonyms":  # groups from every layer add up
            setattr(cfg, key, [*cfg.synonyms, *([list(map(str, g)) for g in value if isinstance(g, list)])])
        else:
            setattr(cfg, key, value)


def load_config(root: Path | None = None, flags: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> Config:
    """Layer the sources; `flags` holds only options the user actually gave."""
    cfg = Config()
    user_file = user_config_dir() / "config.toml"
    layers: list[tuple[str, dict[str, Any]]] = [(str(user_file), _read_toml(user_file))]
    if root is not None:
        repo_file = project_state_dir(root) / "config.toml"
        layers.append((str(repo_file), _read_toml(repo_file)))
    environ = os.environ if env is None else env
    layers.append(("environment", {attr: environ[var] for var, attr in _ENV.items() if environ.get(var)}))
    layers.append(("flags", {k: v for k, v in (flags or {}).items() if v is not None}))
    for name, values in layers:
        if values:
            _apply(cfg, values)
            cfg.sources.append(name)
    if cfg.permission_mode not in PERMISSION_MODES:
        raise ConfigError(f"permission_mode must be one of {', '.join(PERMISSION_MODES)}, got {cfg.permission_mode!r}")
    if cfg.strategy not in ("ctxagent", "full", "window"):
        raise ConfigError(f"strategy must be ctxagent, full or window, got {cfg.strategy!r}")
    if cfg.window is not None and cfg.window < 1000:
        raise ConfigError(f"window must be at least 1000 tokens, got {cfg.window}")
    return cfg


def flags_from_args(args: Any) -> dict[str, Any]:
    """The CLI options that map onto config fields (None when the user did not give them)."""
    out: dict[str, Any] = {
        "model": getattr(args, "model", None),
        "base_url": getattr(args, "base_url", None),
        "window": getattr(args, "window", None),
        "max_steps": getattr(args, "max_steps", None),
        "strategy": getattr(args, "strategy", None),
    }
    if getattr(args, "yes", False):
        out["permission_mode"] = "yolo"
    return out
