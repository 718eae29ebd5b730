"""One `ProviderSpec` per provider: everything ctxagent decides by provider name, in one record — and
THE rule of where a provider's API key may go (`key_url`, `credentials_for`).

    spec = get("anthropic")
    creds = credentials_for(config, spec)   -> Credentials: the key and the one URL it may go to
    spec.key_problem("claude-sonnet-5-5", creds)
        -> "no API key for anthropic:claude-sonnet-5-5: set ANTHROPIC_API_KEY (...)"
    spec.make("claude-sonnet-5-5", creds, 8192) -> Provider

A key goes only to its own provider's URL, or to a URL the user configured for that provider: its own
`anthropic_base_url` / `openai_base_url` (ANTHROPIC_BASE_URL / OPENAI_BASE_URL), or the generic
`base_url` (`--base-url`) when that was given for it — the session's own provider, the one the config's
model names when the config is loaded (agent/config.py `base_url_provider`; no model: the provider local
servers speak). A sub-agent, a summary model, `/model` or a resumed log on another provider never takes
the generic URL. Every provider ctxagent builds, and every catalogue read, takes a `Credentials`, and
only `credentials_for` makes one that holds a key: a key with a URL the rule does not give it cannot be
built (tests/agent/test_key_origins.py checks that no module builds a provider or a client otherwise).

The built-in providers are registered with the same `register()` a plugin would call (as simonw/llm
loads its built-in models through its own plugin hook): adding a provider is one spec. Registration
order is precedence: with two keys set, the first provider with a key picks the start model.

Importing this module is cheap: no SDK, no HTTP client. A spec's `make` and `list_models` import
the provider's module (and its SDK) only when called.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from ctxagent.agent.providers.protocol import CatalogueModel, Provider

# When a provider goes without an API key: never, when the base URL is a loopback address (a local
# proxy or the scripted server), or with any base URL (a server of your own, which may be on
# another machine: Ollama, vLLM, llama.cpp, LM Studio need no key).
KeyRule = Literal["always", "unless-loopback", "unless-base-url"]
# What the SDKs get when no key is needed: they refuse to start without some key.
NO_KEY = "not-needed"

MakeProvider = Callable[[str, "Credentials", "int | None"], "Provider"]
ListModels = Callable[..., "list[CatalogueModel]"]


def is_loopback(base_url: str | None) -> bool:
    """True for a base URL on this machine (localhost, 127.x, ::1)."""
    if not base_url:
        return False
    try:
        host = (urlsplit(base_url.strip()).hostname or "").lower()
    except ValueError:
        return False
    return host == "localhost" or host.startswith("127.") or host == "::1"


class Credentials:
    """A provider's API key, bound to the one base URL it may go to (None: the provider's own URL).

    `Credentials(provider, base_url)` holds no key: for a server that needs none, or a request that is
    never sent (`ctxagent inspect` rebuilds bodies). One that holds a key is made by `credentials_for`
    alone, from the config by the rule (`key_url`). Immutable; its repr never shows the key."""

    __slots__ = ("base_url", "key", "provider")
    provider: str
    key: str | None
    base_url: str | None

    def __init__(self, provider: str, base_url: str | None = None) -> None:
        object.__setattr__(self, "provider", provider)
        object.__setattr__(self, "key", None)
        object.__setattr__(self, "base_url", base_url or None)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Credentials are immutable: credentials_for makes another")

    def __repr__(self) -> str:
        return f"Credentials({self.provider!r}, key={'[set]' if self.key else None}, base_url={self.base_url!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Credentials) and (self.provider, self.key, self.base_url) == (
            other.provider, other.key, other.base_url)

    def __hash__(self) -> int:
        return hash((self.provider, self.key, self.base_url))


@dataclass(frozen=True)
class ProviderSpec:
    """What ctxagent knows of one provider, besides its wire code (the provider's own module)."""

    name: str  # the prefix of `name:model`
    title: str  # how people write it: "Anthropic"
    make: MakeProvider  # (model, Credentials, max_tokens) -> Provider; imports the SDK when called
    key_field: str | None = None  # the Config field of its API key; None: it takes none
    key_env: str | None = None  # the environment variable of that key
    base_url_field: str | None = None  # the Config field of its own base URL (None: it takes no URL at all)
    base_url_env: str | None = None
    key_rule: KeyRule = "always"
    keyless_hint: str = ""  # the way out that the missing-key message offers, after "or "
    start_model: str = ""  # the model a key alone starts with (must be in models.toml)
    bare_names: re.Pattern[str] | None = None  # model names without a prefix that are this provider's
    tokenizer: str = "heuristic"  # the local tokenizer family of `bare_names` models the registry lacks
    family: str = ""  # models.toml [families.X] for `bare_names` models the registry lacks
    serves_local: bool = False  # its API is what local servers speak: registry models without a provider
    uses_registry: bool = True  # False: the model name is no model (a script path): no registry, no catalogue
    summary_sibling: bool = True  # False: summaries need summary_model (no cheaper sibling to ask)
    server_edits: bool = False  # its server does the server-side strategies (anthropic-clear/-compact)
    no_server_edits_note: str = ""  # said when a server-side strategy is asked of it
    list_models: ListModels | None = None  # (Credentials, *, timeout, max_bytes, max_models) -> its catalogue
    untrusted_reason: str = ""  # why no repository's config nor tool call may pick it ("": they may)
    images: bool = False  # its models take image input (a registry entry's `images` says otherwise: registry.takes_images)

    def key_problem(self, model: str, credentials: Credentials) -> str | None:
        """None when this provider can start with these credentials; else what to tell the user."""
        api_key, base_url = credentials.key, credentials.base_url
        if self.key_env is None or api_key:
            return None
        if self.key_rule == "unless-base-url" and base_url:
            return None
        if self.key_rule == "unless-loopback" and is_loopback(base_url):
            return None
        text = f"no API key for {self.name}:{model}: set {self.key_env}"
        if base_url and self.key_rule == "unless-loopback":
            host = urlsplit(base_url.strip()).hostname or "?"  # the host only: a URL may carry a password
            text += f" ({host} is not a loopback address: only a local server may go without a key)"
        return text + (f", or {self.keyless_hint}" if self.keyless_hint else "")

    def owns_bare_name(self, name: str) -> bool:
        return self.bare_names is not None and self.bare_names.match(name) is not None


_SPECS: dict[str, ProviderSpec] = {}


def register(spec: ProviderSpec) -> ProviderSpec:
    """Make `spec.name:` a provider. A name is registered once (ValueError otherwise)."""
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", spec.name):
        raise ValueError(f"provider name {spec.name!r}: lower-case letters, digits, '-' and '_' only")
    if spec.name in _SPECS:
        raise ValueError(f"provider {spec.name!r} is already registered")
    _SPECS[spec.name] = spec
    return spec


def unregister(name: str) -> ProviderSpec | None:
    """Remove a provider (for plugins and tests); the removed spec, or None."""
    return _SPECS.pop(name, None)


def find(name: str) -> ProviderSpec | None:
    """The spec of a provider name (any case), or None."""
    return _SPECS.get((name or "").lower())


def get(name: str) -> ProviderSpec:
    """The spec of a provider name that parsing already accepted (KeyError for any other)."""
    spec = find(name)
    if spec is None:
        raise KeyError(f"unknown provider {name!r}; known: {', '.join(_SPECS)}")
    return spec


def providers() -> tuple[ProviderSpec, ...]:
    """Every registered provider, in precedence order."""
    return tuple(_SPECS.values())


def keyed() -> tuple[ProviderSpec, ...]:
    """The providers a user sets up with a key (the ones help text and `ctxagent models` name)."""
    return tuple(s for s in _SPECS.values() if s.key_env)


def local_provider() -> ProviderSpec:
    """The provider whose API local model servers speak."""
    return next(s for s in _SPECS.values() if s.serves_local)


def provider_of_model(value: str) -> ProviderSpec | None:
    """The spec named by a `provider:` prefix of `value`, without parsing it further (None: no prefix)."""
    prefix, sep, _ = (value or "").strip().partition(":")
    return find(prefix.strip()) if sep else None


# -- where a key may go: THE rule ------------------------------------------------------------------


def base_url_owner(config: Any) -> str:
    """The provider the generic `base_url` was given for: the session's own (agent/config.py binds it
    when the config is made), else the provider local servers speak."""
    return str(getattr(config, "base_url_provider", None) or local_provider().name)


def key_url(spec: ProviderSpec, config: Any) -> str | None:
    """The base URL `spec`'s key may go to under `config`; None: the provider's own URL.

    The generic `base_url` (`--base-url`) when it was given for this provider (`base_url_owner`), else
    the URL the user set for this provider alone (`anthropic_base_url`, OPENAI_BASE_URL, ...), else its
    own. A provider without a base URL field takes none."""
    if spec.base_url_field is None:
        return None
    if config.base_url and base_url_owner(config) == spec.name:
        return str(config.base_url)
    return getattr(config, spec.base_url_field) or None


def credentials_for(config: Any, provider: str | ProviderSpec) -> Credentials:
    """`provider`'s key from `config`, bound to the URL the rule gives it (`key_url`): the one way to
    get a key to a provider."""
    spec = get(provider) if isinstance(provider, str) else provider
    made = Credentials(spec.name, key_url(spec, config))
    key = getattr(config, spec.key_field, None) if spec.key_field else None
    if key:
        object.__setattr__(made, "key", str(key))
    return made


def default_model(config: Any) -> str | None:
    """The model a key alone starts with: the start model of the first provider (in the specs'
    precedence: Anthropic's, then OpenAI's) whose key is set; None with a generic --base-url (a local
    server names its own models)."""
    if config.base_url:
        return None
    for spec in providers():
        if spec.start_model and credentials_for(config, spec).key:
            return f"{spec.name}:{spec.start_model}"
    return None


# -- the built-in providers; each constructor imports its SDK only when called ----------------------


def _make_anthropic(model: str, credentials: Credentials, max_tokens: int | None) -> Provider:
    from ctxagent.agent.providers.anthropic import AnthropicProvider

    return AnthropicProvider(model, api_key=credentials.key or NO_KEY, base_url=credentials.base_url,
                             max_tokens=max_tokens)


def _list_anthropic(credentials: Credentials, **kwargs: Any) -> list[CatalogueModel]:
    from ctxagent.agent.providers.anthropic import list_models

    return list_models(credentials.key or NO_KEY, credentials.base_url, **kwargs)


def _make_openai(model: str, credentials: Credentials, max_tokens: int | None) -> Provider:
    from ctxagent.agent.providers.openai import OpenAIProvider

    return OpenAIProvider(model, api_key=credentials.key or NO_KEY, base_url=credentials.base_url,
                          max_tokens=max_tokens)


def _list_openai(credentials: Credentials, **kwargs: Any) -> list[CatalogueModel]:
    from ctxagent.agent.providers.openai import list_models

    return list_models(credentials.key or NO_KEY, credentials.base_url, **kwargs)


ANTHROPIC = ProviderSpec(
    name="anthropic", title="Anthropic", make=_make_anthropic,
    key_field="anthropic_api_key", key_env="ANTHROPIC_API_KEY",
    base_url_field="anthropic_base_url", base_url_env="ANTHROPIC_BASE_URL",
    # A key-less request to a remote Anthropic endpoint fails at the first step with a 401; a local
    # proxy (or the scripted server) is the one case that works without one.
    key_rule="unless-loopback", keyless_hint="use --base-url for a local Anthropic-compatible server that needs none",
    start_model="claude-sonnet-5-5", bare_names=re.compile(r"^claude", re.IGNORECASE),
    tokenizer="cl100k_base", family="claude", server_edits=True, list_models=_list_anthropic, images=True,
)
OPENAI = ProviderSpec(
    name="openai", title="OpenAI", make=_make_openai,
    key_field="openai_api_key", key_env="OPENAI_API_KEY",
    base_url_field="openai_base_url", base_url_env="OPENAI_BASE_URL",
    # Self-hosted OpenAI-compatible servers need no key and often run on another machine (a GPU box).
    key_rule="unless-base-url",
    keyless_hint="use --base-url (or OPENAI_BASE_URL) for an OpenAI-compatible server such as Ollama, vLLM, "
                 "llama.cpp or LM Studio",
    start_model="gpt-6.1-sol", bare_names=re.compile(r"^(gpt-|chatgpt-|o\d)", re.IGNORECASE),
    tokenizer="o200k_base", serves_local=True, list_models=_list_openai, images=True,
    no_server_edits_note="OpenAI's compaction exists only in its Responses API, which ctxagent's OpenAI provider "
                         "(Chat Completions) does not use: `bench replay` emulates it as openai-compact.",
)
# The scripted model (tests and the demo) is the lab's: tui/lab/scripted/spec.py registers it with this same
# `register`, when a front end or a test asks for it; the runtime never names it.
BUILTIN_PROVIDERS = (ANTHROPIC, OPENAI)

for _spec in BUILTIN_PROVIDERS:
    register(_spec)
