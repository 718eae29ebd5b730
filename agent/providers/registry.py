"""Model names, the model registry (agent/data/models.toml) and the provider factory.

    parse_model_name("anthropic:claude-sonnet-4-5") -> ("anthropic", "claude-sonnet-4-5")
    model_info("openai", "gpt-5-mini")              -> ModelInfo(window=400000, ...)
    make_provider("openai:qwen2.5-coder:7b", api_key=None, base_url="http://127.0.0.1:11434")
    cost_usd(info, usage)                           -> dollars
    cheaper_sibling("anthropic", "claude-opus-4-5") -> "claude-haiku-4-5"
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from ctxagent.agent.providers.base import Provider, Usage
from ctxagent.context.errors import ConfigError

PROVIDERS = ("anthropic", "openai", "scripted")
TOKENIZERS = ("o200k_base", "cl100k_base", "heuristic")
_OPENAI_BARE = re.compile(r"^(gpt-|chatgpt-|o\d)", re.IGNORECASE)


@dataclass(frozen=True)
class Prices:
    """USD per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


@dataclass(frozen=True)
class ModelInfo:
    window: int
    max_output: int
    tokenizer: str  # "o200k_base" | "cl100k_base" | "heuristic"
    prices: Prices = field(default_factory=Prices)
    known: bool = False  # False: the registry has no entry; window is the default
    name: str = ""  # the registry entry that matched ("" when unknown)
    provider: str = ""  # the provider the entry belongs to ("" when unknown)


@functools.lru_cache(maxsize=1)
def load_registry() -> dict[str, Any]:
    """The parsed models.toml: {"defaults": {...}, "models": {name: {...}}}."""
    text = resources.files("ctxagent.agent").joinpath("data/models.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    for name, entry in data.get("models", {}).items():
        if entry.get("tokenizer", "heuristic") not in TOKENIZERS:
            raise ConfigError(f"models.toml: {name}: unknown tokenizer {entry.get('tokenizer')!r}")
    return data


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
        raise ConfigError("no model given: use e.g. --model anthropic:claude-sonnet-4-5 or openai:gpt-5-mini")
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
            if len(c) > len(alias) and c.startswith(alias) and c[len(alias)] in "-_.:@" and (best is None or len(alias) > len(best)):
                best = alias
    return idx[best] if best is not None else None


def _guess_tokenizer(model: str) -> str:
    name = _candidates(model)[-1]
    if _OPENAI_BARE.match(name):
        return "o200k_base"
    if name.startswith("claude"):
        return "cl100k_base"
    return str(load_registry().get("defaults", {}).get("tokenizer", "heuristic"))


def model_info(provider: str, model: str, default_window: int = 128000) -> ModelInfo:
    """What the registry knows about a model; unknown models get `default_window` and known=False."""
    data = load_registry()
    defaults = data.get("defaults", {})
    key = None if provider == "scripted" else _lookup(model)
    if key is None:
        family = data.get("families", {}).get("claude", {}) if (
            provider != "scripted" and _candidates(model)[-1].startswith("claude")) else {}
        return ModelInfo(window=int(family.get("window", default_window)),
                         max_output=int(family.get("max_output", defaults.get("max_output", 8192))),
                         tokenizer=_guess_tokenizer(model) if provider != "scripted" else "heuristic",
                         known=False)
    entry = data["models"][key]
    p = entry.get("prices", {})
    return ModelInfo(
        window=int(entry["window"]),
        max_output=int(entry.get("max_output", defaults.get("max_output", 8192))),
        tokenizer=str(entry.get("tokenizer", "heuristic")),
        prices=Prices(input=float(p.get("input", 0)), output=float(p.get("output", 0)),
                      cache_read=float(p.get("cache_read", 0)), cache_write=float(p.get("cache_write", 0))),
        known=True,
        name=key,
        provider=str(entry.get("provider", "")),
    )


def cost_usd(info: ModelInfo, usage: Usage | dict[str, int]) -> float:
    """Dollars for one response's usage (Usage, or a dict with the same field names)."""
    u = usage if isinstance(usage, dict) else {
        "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
        "cache_read": usage.cache_read, "cache_write": usage.cache_write}
    p = info.prices
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
