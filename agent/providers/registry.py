"""Model names, the model registry (agent/data/models.toml) and the provider factory.

What depends on the provider (its key rule, bare model names, tokenizer family, ...) is read off its
`ProviderSpec` (providers/specs.py); this module holds the model-name and registry logic.

    parse_model_name("anthropic:claude-sonnet-5-5") -> ("anthropic", "claude-sonnet-5-5")
    model_info("openai", "gpt-5.4-mini")            -> ModelInfo(window=400000, ...)
    make_provider("openai:qwen2.5-coder:7b", specs.credentials_for(config, "openai"))
    cost_usd(info, usage)                           -> dollars
    cheaper_sibling("anthropic", "claude-opus-5-5") -> "claude-haiku-5-5"
    lifecycle_problem(info, "anthropic")            -> None | ("deprecated" | "retired", message)
    takes_images("openai", "o3-mini")               -> False
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any

from ctxagent.agent.providers import specs
from ctxagent.agent.providers.protocol import Provider
from ctxagent.context.errors import ConfigError
from ctxagent.context.prompt_cache import rules_for
from ctxagent.context.request import Usage

TOKENIZERS = ("o200k_base", "cl100k_base", "heuristic")
LIFECYCLES = ("active", "deprecated", "retired")


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
    images: bool | None = None  # takes image input: the catalogue's word, else the entry's; None: neither says

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
        if entry.get("provider") is not None and specs.find(entry["provider"]) is None:
            raise ConfigError(f"models.toml: {name}: unknown provider {entry['provider']!r}")
    return data


def is_local(provider: str, name: str) -> bool:
    """A model served by a local server of your own (Ollama, vLLM, ...), not by the provider itself."""
    spec = specs.find(provider)
    return spec is not None and spec.serves_local and not spec.owns_bare_name(_candidates(name)[-1])


def _examples(model: str | None = None) -> str:
    """`anthropic:M or openai:M`: each keyed provider's start model, or `model` under each prefix."""
    return " or ".join(f"{s.name}:{model or s.start_model}" for s in specs.keyed())


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

    Any registered provider's prefix (providers/specs.py); bare names by each spec's `bare_names`
    (claude-* → anthropic; gpt-*, o1/o3/o4… → openai); a local model the registry knows (llama3.1,
    qwen2.5-coder:7b, …) → its entry's provider, or the one local servers speak (openai).
    """
    s = (s or "").strip()
    if not s:
        raise ConfigError(f"no model given: use e.g. --model {_examples()}")
    prefix, sep, rest = s.partition(":")
    spec = specs.find(prefix) if sep else None
    if spec is not None:
        if not rest.strip():
            raise ConfigError(f"model name {s!r} has no model after '{prefix}:'")
        return spec.name, rest.strip()
    for spec in specs.providers():
        if spec.owns_bare_name(s):
            return spec.name, s
    key = _lookup(s)
    if key is not None:
        return str(load_registry()["models"][key].get("provider") or specs.local_provider().name), s
    local = specs.local_provider().name
    raise ConfigError(
        f"cannot tell the provider of model {s!r}: write {_examples(s)} "
        f"({local}: also serves Ollama, vLLM, llama.cpp and LM Studio with --base-url)")


def provider_named(model: str | None) -> str | None:
    """The provider of a model name as `parse_model_name` reads it; None for no name, or one no
    provider owns (what agent/config.py binds the generic base URL to)."""
    if not (model or "").strip():
        return None
    try:
        return parse_model_name(str(model))[0]
    except ConfigError:
        return None


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


def _family_spec(model: str) -> specs.ProviderSpec | None:
    """The provider whose bare names `model` has (whatever prefix it came with: a proxy serves Claude
    under openai:), which says its tokenizer family and registry family."""
    name = _candidates(model)[-1]
    return next((s for s in specs.providers() if s.owns_bare_name(name)), None)


def _guess_tokenizer(model: str) -> str:
    spec = _family_spec(model)
    if spec is not None:
        return spec.tokenizer
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
    registered = _uses_registry(provider)
    key = _lookup(model) if registered else None
    if key is None:
        kin = _family_spec(model) if registered else None
        family = data.get("families", {}).get(kin.family, {}) if kin is not None and kin.family else {}
        info = ModelInfo(window=int(family.get("window", default_window)),
                         max_output=int(family.get("max_output", defaults.get("max_output", 8192))),
                         tokenizer=_guess_tokenizer(model) if registered else "heuristic",
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
            images=bool(entry["images"]) if "images" in entry else None,
        )
    listed = (catalogue or {}).get(model) or (catalogue or {}).get(key or "") if registered else None
    if listed is None:
        return info
    info = replace(info, known=True, source="catalogue", provider=provider,
                   window=listed.window or info.window, max_output=listed.max_output or info.max_output,
                   images=listed.images if listed.images is not None else info.images)
    if listed.lifecycle:  # the provider says: that is the lifecycle
        return replace(info, lifecycle=listed.lifecycle, retires=listed.retires, retire_by_date=listed.dated)
    if info.lifecycle_on() == "retired":  # listed without a word on it: still served, whatever we thought
        return replace(info, lifecycle="deprecated", retire_by_date=False)
    return info


def _uses_registry(provider: str) -> bool:
    """False for a provider whose model name is no model (a script path): no registry, no catalogue."""
    spec = specs.find(provider)
    return spec is None or spec.uses_registry


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


def takes_images(provider: str, model: str, info: ModelInfo | None = None) -> bool:
    """Whether `provider:model` takes image input: what the provider's catalogue or the registry entry
    says (`info`, `model_info`'s answer: the catalogue wins); else its provider's rule
    (`ProviderSpec.images`), except that a local model (Ollama, vLLM, ...) takes none unless its entry
    says so. THE rule: read_file, the builder, MCP results and read_event all go by it."""
    spec = specs.find(provider)
    said = (info if info is not None else model_info(provider, model)).images
    if said is not None:
        return said
    if spec is None or is_local(provider, model):
        return False
    return spec.images


def label_takes_images(label: str) -> bool:
    """`takes_images` for a "provider:model" label, by the registry alone (no catalogue: what an agent
    without one and `inspect` go by); False for a name no provider owns."""
    try:
        return takes_images(*parse_model_name(label))
    except ConfigError:
        return False


def cost_usd(info: ModelInfo, usage: Usage, cache_ttl: str = "5m") -> float:
    """Dollars for one response's usage.

    A prompt over the model's long-context threshold bills the whole request at that rate. Cache writes
    with the 1-hour TTL (`cache_ttl = "1h"`, Anthropic's option) cost what the provider's cache rules say
    (context/prompt_cache.py: 2 × the input price instead of 1.25 ×).
    """
    p = info.long_context if info.long_context is not None and usage.prompt_tokens > info.long_context.above else info.prices
    total = (usage.input_tokens * p.input + usage.output_tokens * p.output
             + usage.cache_read * p.cache_read + usage.cache_write * p.cache_write * write_factor(info.provider, cache_ttl))
    return total / 1_000_000


def write_factor(provider: str, cache_ttl: str) -> float:
    """A cache write's price with `cache_ttl` over its price with the default TTL (the registry's)."""
    base = rules_for(f"{provider}:", "5m")
    return rules_for(f"{provider}:", cache_ttl).write / base.write if base.write else 1.0


def cheaper_sibling(provider: str, model: str) -> str:
    """A cheaper model of the same provider and family (for summaries): a Haiku or a mini.

    Returns the bare model name (same provider as given); a model without a known sibling (local,
    scripted, already the cheapest) is its own sibling.
    """
    if not _uses_registry(provider):
        return model
    key = _lookup(model)
    if key is None:
        return model
    sibling = load_registry()["models"][key].get("sibling")
    if not sibling or sibling == key:
        return model
    return str(sibling)


def make_provider(model_name: str, credentials: specs.Credentials | None = None, *,
                  max_tokens: int | None = None) -> Provider:
    """A ready provider for `provider:model`, with that provider's credentials (specs.credentials_for:
    its key bound to the URL it may go to; None: no key, its own URL). Raises ConfigError when they are
    another provider's, or when its spec's key rule is not met (`ProviderSpec.key_problem`: the rule
    `ctxagent doctor` checks too)."""
    provider, model = parse_model_name(model_name)
    spec = specs.get(provider)
    credentials = credentials if credentials is not None else specs.Credentials(spec.name)
    if credentials.provider != spec.name:
        raise ConfigError(f"{spec.name}:{model} cannot be built with {credentials.provider}'s credentials: "
                          "a key goes only to its own provider")
    problem = spec.key_problem(model, credentials)
    if problem is not None:
        raise ConfigError(problem)
    return spec.make(model, credentials, max_tokens)
