"""Model names, the model registry (agent/data/models.toml) and the provider factory.

    parse_model_name("anthropic:claude-sonnet-5-5") -> ("anthropic", "claude-sonnet-5-5")
    model_info("openai", "gpt-5.4-mini")            -> ModelInfo(window=400000, ...)
    make_provider("openai:qwen2.5-coder:7b", api_key=None, base_url="http://127.0.0.1:11434")
    cost_usd(info, usage)                           -> dollars
    cheaper_sibling("anthropic", "claude-opus-5-5") -> "claude-haiku-5-5"
    start_model("anthropic")                        -> "claude-sonnet-5-5" (a key alone starts with it)
    lifecycle_problem(info, "anthropic")            -> None | ("deprecated" | "retired", message)
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from ctxagent.agent.providers.protocol import Provider, Usage
from ctxagent.context.errors import ConfigError

PROVIDERS = ("anthropic", "openai", "scripted")
TOKENIZERS = ("o200k_base", "cl100k_base", "heuristic")
LIFECYCLES = ("active", "deprecated", "retired")
_OPENAI_BARE = re.compile(r"^(gpt-|chatgpt-|o\d)", re.IGNORECASE)


@dataclass(frozen=True)
class Prices:
    """USD per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    above: int = 0  # for a long-context rate: it applies to a request whose prompt is over this


@dataclass(frozen=True)
class ModelInfo:
    window: int
    max_output: int
    tokenizer: str  # "o200k_base" | "cl100k_base" | "heuristic"
    prices: Prices = field(default_factory=Prices)
    known: bool = False  # False: neither the registry nor the provider's catalogue has an entry
    name: str = ""  # the registry entry that matched ("" when unknown)
    provider: str = ""  # the provider the entry belongs to ("" when unknown)
    lifecycle: str = "active"  # "active" | "deprecated" | "retired", as recorded (see lifecycle_on)
    retires: dt.date | None = None  # the announced shutdown date
    replacement: str = ""  # the model to move to (bare name, same provider)
    long_context: Prices | None = None  # the rate over `long_context.above` prompt tokens
    source: str = "registry"  # "registry" | "catalogue" (the provider's own list) | "default"
    retire_by_date: bool = True  # False when the provider's catalogue says it is still served

    def lifecycle_on(self, today: dt.date | None = None) -> str:
        """The lifecycle on `today`: a model past its announced shutdown date counts as retired."""
        today = today or dt.date.today()
        if self.lifecycle == "retired" or (self.retire_by_date and self.retires is not None and self.retires <= today):
            return "retired"
        return self.lifecycle


@functools.lru_cache(maxsize=1)
def load_registry() -> dict[str, Any]:
    """The parsed models.toml: {"defaults": {...}, "models": {name: {...}}}."""
    text = resources.files("ctxagent.agent").joinpath("data/models.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    models = data.get("models", {})
    for name, entry in models.items():
        if entry.get("tokenizer", "heuristic") not in TOKENIZERS:
            raise ConfigError(f"models.toml: {name}: unknown tokenizer {entry.get('tokenizer')!r}")
        if entry.get("lifecycle", "active") not in LIFECYCLES:
            raise ConfigError(f"models.toml: {name}: unknown lifecycle {entry.get('lifecycle')!r}")
        if entry.get("replacement") and entry["replacement"] not in models:
            raise ConfigError(f"models.toml: {name}: replacement {entry['replacement']!r} is not in the registry")
    return data


def is_local(provider: str, name: str) -> bool:
    """A model served by an OpenAI-compatible server of your own (Ollama, vLLM, ...), not by OpenAI."""
    return provider == "openai" and not _OPENAI_BARE.match(_candidates(name)[-1])


def start_model(provider: str) -> str:
    """The model a key of `provider` alone starts with (models.toml [start])."""
    return str(load_registry().get("start", {}).get(provider, ""))


@functools.lru_cache(maxsize=1)
def _index() -> dict[str, str]:
    """Lower-cased name or alias → registry key."""
    idx: dict[str, str] = {}
    for name, entry in load_registry()["models"].items():
        idx[name.lower()] = name
        for alias in entry.get("aliases", []):
            idx[alias.lower()] = name
    return idx


def parse_model_name(s: str) -> tuple[str, str]:
    """`provider:model` (or a bare name) → (provider, model).

    Bare names: claude-* → anthropic; gpt-*, o1/o3/o4… → openai; a local model the registry knows
    (llama3.1, qwen2.5-coder:7b, …) → openai (the OpenAI-compatible servers serve them).
    """
    s = (s or "").strip()
    if not s:
        raise ConfigError(f"no model given: use e.g. --model anthropic:{start_model('anthropic')} "
                          f"or openai:{start_model('openai')}")
    prefix, sep, rest = s.partition(":")
    if sep and prefix.lower() in PROVIDERS:
        if not rest.strip():
            raise ConfigError(f"model name {s!r} has no model after '{prefix}:'")
        return prefix.lower(), rest.strip()
    if s.lower().startswith("claude"):
        return "anthropic", s
    if _OPENAI_BARE.match(s):
        return "openai", s
    key = _lookup(s)
    if key is not None:
        return str(load_registry()["models"][key].get("provider", "openai")), s
    raise ConfigError(
        f"cannot tell the provider of model {s!r}: write anthropic:{s} or openai:{s} "
        "(openai: also serves Ollama, vLLM, llama.cpp and LM Studio with --base-url)")


def _candidates(model: str) -> list[str]:
    """Spellings to try, most specific first: as given, without org/ prefix, without :tag."""
    name = model.strip().lower()
    out = [name]
    if "/" in name:
        name = name.rsplit("/", 1)[1]
        out.append(name)
    if ":" in name:
        name = name.split(":", 1)[0]
        out.append(name)
    return out


def _lookup(model: str) -> str | None:
    idx = _index()
    cands = _candidates(model)
    for c in cands:
        if c in idx:
            return idx[c]
    # Dated or suffixed releases: the longest key the name starts with, at a word boundary.
    best: str | None = None
    for c in cands:
        for alias in idx:
            if (len(c) > len(alias) and c.startswith(alias) and c[len(alias)] in "-_.:@"
                    and not _next_version(c[len(alias):]) and (best is None or len(alias) > len(best))):
                best = alias
    return idx[best] if best is not None else None


_VERSION_STEP = re.compile(r"^(\.\d|-\d{1,2}(?=$|[-.@:_]))")


def _next_version(rest: str) -> bool:
    """True when what follows a key is another version, not a release suffix: gpt-5 + ".3",
    claude-opus-4 + "-9" (a different model), unlike claude-sonnet-4-5 + "-20250929" (a dated release)."""
    return bool(_VERSION_STEP.match(rest))


def _guess_tokenizer(model: str) -> str:
    name = _candidates(model)[-1]
    if _OPENAI_BARE.match(name):
        return "o200k_base"
    if name.startswith("claude"):
        return "cl100k_base"
    return str(load_registry().get("defaults", {}).get("tokenizer", "heuristic"))


def _prices(p: dict[str, Any]) -> Prices:
    return Prices(input=float(p.get("input", 0)), output=float(p.get("output", 0)),
                  cache_read=float(p.get("cache_read", 0)), cache_write=float(p.get("cache_write", 0)),
                  above=int(p.get("above", 0)))


def model_info(provider: str, model: str, default_window: int = 128000,
               catalogue: dict[str, Any] | None = None) -> ModelInfo:
    """What the registry knows about a model; unknown models get `default_window` and known=False.

    `catalogue` (model id → providers.catalogue.CatalogueModel, the provider's own list) overrides
    the registry's window, maximum output and lifecycle, and makes a model the registry lacks known.
    """
    data = load_registry()
    defaults = data.get("defaults", {})
    key = None if provider == "scripted" else _lookup(model)
    if key is None:
        family = data.get("families", {}).get("claude", {}) if (
            provider != "scripted" and _candidates(model)[-1].startswith("claude")) else {}
        info = ModelInfo(window=int(family.get("window", default_window)),
                         max_output=int(family.get("max_output", defaults.get("max_output", 8192))),
                         tokenizer=_guess_tokenizer(model) if provider != "scripted" else "heuristic",
                         known=False, source="default")
    else:
        entry = data["models"][key]
        info = ModelInfo(
            window=int(entry["window"]),
            max_output=int(entry.get("max_output", defaults.get("max_output", 8192))),
            tokenizer=str(entry.get("tokenizer", "heuristic")),
            prices=_prices(entry.get("prices", {})),
            known=True,
            name=key,
            provider=str(entry.get("provider", "")),
            lifecycle=str(entry.get("lifecycle", "active")),
            retires=entry.get("retires"),
            replacement=str(entry.get("replacement", "")),
            long_context=_prices(entry["long_context"]) if entry.get("long_context") else None,
        )
    listed = None if provider == "scripted" else (catalogue or {}).get(model) or (catalogue or {}).get(key or "")
    if listed is None:
        return info
    info = replace(info, known=True, source="catalogue", provider=provider,
                   window=listed.window or info.window, max_output=listed.max_output or info.max_output)
    if listed.lifecycle:  # the provider says: that is the lifecycle
        return replace(info, lifecycle=listed.lifecycle, retires=listed.retires, retire_by_date=listed.dated)
    if info.lifecycle_on() == "retired":  # listed without a word on it: still served, whatever we thought
        return replace(info, lifecycle="deprecated", retire_by_date=False)
    return info


def lifecycle_problem(info: ModelInfo, label: str, today: dt.date | None = None) -> tuple[str, str] | None:
    """None for an active model; else ("deprecated" | "retired", what to tell the user)."""
    state = info.lifecycle_on(today)
    if state == "active":
        return None
    provider = label.split(":", 1)[0]
    instead = f"use --model {provider}:{info.replacement}" if info.replacement else "pick another with `ctxagent models`"
    if state == "retired":
        when = f" on {info.retires.isoformat()}" if info.retires is not None and info.retires <= (today or dt.date.today()) else ""
        return state, f"{label} was retired{when} and no longer answers: {instead}"
    when = f" and shuts down on {info.retires.isoformat()}" if info.retires is not None else ""
    return state, f"{label} is deprecated{when}; {instead}"


def cost_usd(info: ModelInfo, usage: Usage | dict[str, int]) -> float:
    """Dollars for one response's usage (Usage, or a dict with the same field names).

    A prompt over the model's long-context threshold bills the whole request at that rate.
    """
    u = usage if isinstance(usage, dict) else {
        "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
        "cache_read": usage.cache_read, "cache_write": usage.cache_write}
    prompt = u.get("input_tokens", 0) + u.get("cache_read", 0) + u.get("cache_write", 0)
    p = info.long_context if info.long_context is not None and prompt > info.long_context.above else info.prices
    total = (u.get("input_tokens", 0) * p.input + u.get("output_tokens", 0) * p.output
             + u.get("cache_read", 0) * p.cache_read + u.get("cache_write", 0) * p.cache_write)
    return total / 1_000_000


def cheaper_sibling(provider: str, model: str) -> str:
    """A cheaper model of the same provider and family (for summaries): a Haiku or a mini.

    Returns the bare model name (same provider as given); a model without a known sibling (local,
    scripted, already the cheapest) is its own sibling.
    """
    if provider == "scripted":
        return model
    key = _lookup(model)
    if key is None:
        return model
    sibling = load_registry()["models"][key].get("sibling")
    if not sibling or sibling == key:
        return model
    return str(sibling)


def _is_loopback(base_url: str | None) -> bool:
    if not base_url:
        return False
    host = (urlsplit(base_url).hostname or "").lower()
    return host == "localhost" or host.startswith("127.") or host == "::1"


def make_provider(model_name: str, *, api_key: str | None = None, base_url: str | None = None,
                  max_tokens: int | None = None) -> Provider:
    """A ready provider for `provider:model`. Raises ConfigError when a needed key is missing.

    OpenAI with a custom `base_url` runs without a key (local servers need none); Anthropic needs
    one unless `base_url` is a loopback address (a local proxy or the scripted server).
    """
    provider, model = parse_model_name(model_name)
    if provider == "scripted":
        from ctxagent.agent.providers.scripted import ScriptedProvider

        return ScriptedProvider(model, max_tokens=max_tokens)
    if provider == "anthropic":
        if not api_key:
            if not _is_loopback(base_url):
                raise ConfigError(
                    f"no API key for anthropic:{model}: set ANTHROPIC_API_KEY, "
                    "or use --base-url for a local Anthropic-compatible server that needs none")
            api_key = "not-needed"
        from ctxagent.agent.providers.anthropic import AnthropicProvider

        return AnthropicProvider(model, api_key=api_key, base_url=base_url, max_tokens=max_tokens)
    if not api_key:
        if not base_url:
            raise ConfigError(
                f"no API key for openai:{model}: set OPENAI_API_KEY, or use --base-url (or OPENAI_BASE_URL) "
                "for an OpenAI-compatible server such as Ollama, vLLM, llama.cpp or LM Studio")
        api_key = "not-needed"
    from ctxagent.agent.providers.openai import OpenAIProvider

    return OpenAIProvider(model, api_key=api_key, base_url=base_url, max_tokens=max_tokens)
