"""The provider's own model catalogue, cached in the user state dir; it overrides the registry.

Anthropic's `GET /v1/models` returns each model's input window (`max_input_tokens`), maximum output
(`max_tokens`) and lifecycle (`active` / `deprecated` / `retired`, with `retires_at`); OpenAI's
`GET /v1/models` says which models a key can use and, for some, a `shutdown_date`. A provider's
spec names its reader (`list_models` in its module, through its official SDK, so the scripted server
tests the same code path); it is called with a short timeout.

A fetch never fails a start: offline, a bad key or a garbled answer leaves the last good cache (or
none) and records the failure, so the next attempt waits `RETRY_AFTER_FAILURE` instead of paying
the timeout again on every run. The cache holds no key, only the base URL the list came from. A
fetch takes the provider's `Credentials` (specs.credentials_for): its key goes where the rule says.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxagent.agent.providers.protocol import CatalogueModel
from ctxagent.agent.providers.specs import (
    Credentials,
    ProviderSpec,
    credentials_for,
    default_model,
    find,
    providers,
)
from ctxagent.context.errors import CtxagentError
from ctxagent.context.floor.state_paths import user_state_dir

MAX_AGE = 24 * 3600  # a catalogue younger than this is used as is
RETRY_AFTER_FAILURE = 3600
FETCH_TIMEOUT = 3.0  # seconds; the catalogue is a nicety, never worth a slow start
MAX_MODELS = 2000  # stop paging after this many (a hostile or broken server could page forever)
CATALOGUE_MAX_BYTES = 8 * 1024 * 1024  # one page of the list; a real one is tens of kilobytes


@dataclass
class Catalogue:
    provider: str
    base_url: str
    models: dict[str, CatalogueModel] = field(default_factory=dict)
    fetched_at: float | None = None
    failed_at: float | None = None
    error: str = ""

    def fresh(self, now: float | None = None) -> bool:
        """Young enough to skip a fetch: a recent list, or a recent failure (don't hammer)."""
        now = time.time() if now is None else now
        if self.fetched_at is not None and now - self.fetched_at < MAX_AGE:
            return True
        return self.failed_at is not None and now - self.failed_at < RETRY_AFTER_FAILURE


def cache_path(provider: str, base_url: str | None) -> Path:
    """One file per provider and endpoint: a local server's list is not Anthropic's."""
    suffix = "" if not base_url else "-" + hashlib.sha256(base_url.encode()).hexdigest()[:12]
    return user_state_dir() / "models" / f"{provider}{suffix}.json"


def load(provider: str, base_url: str | None) -> Catalogue:
    """The cached catalogue (empty when none or unreadable: a cache is never fatal)."""
    path = cache_path(provider, base_url)
    empty = Catalogue(provider, base_url or "")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        models = {m.id: m for m in (CatalogueModel.from_json(x) for x in raw.get("models", []))}
        return Catalogue(provider, base_url or "", models, raw.get("fetched_at"), raw.get("failed_at"),
                         str(raw.get("error") or ""))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return empty


def _save(cat: Catalogue) -> None:
    path = cache_path(cat.provider, cat.base_url or None)
    data = {"provider": cat.provider, "base_url": cat.base_url, "fetched_at": cat.fetched_at,
            "failed_at": cat.failed_at, "error": cat.error, "models": [m.to_json() for m in cat.models.values()]}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only state dir costs a refetch next time, nothing more


def fetch(credentials: Credentials, *, timeout: float = FETCH_TIMEOUT) -> Catalogue:
    """Ask the provider now and store the answer; on failure keep the old list and record why."""
    cat = load(credentials.provider, credentials.base_url)
    try:
        spec = find(credentials.provider)
        if spec is None or spec.list_models is None:
            return cat
        models = spec.list_models(credentials, timeout=timeout, max_bytes=CATALOGUE_MAX_BYTES, max_models=MAX_MODELS)
    except Exception as exc:  # noqa: BLE001 - offline, bad key, odd server: never fatal
        cat.failed_at, cat.error = time.time(), f"{type(exc).__name__}: {str(exc)[:200]}"
        _save(cat)
        return cat
    cat.models = {m.id: m for m in models}
    cat.fetched_at, cat.failed_at, cat.error = time.time(), None, ""
    _save(cat)
    return cat


def refresh_if_stale(credentials: Credentials, *, timeout: float = FETCH_TIMEOUT) -> Catalogue:
    """The cached catalogue, fetched first when it is old (and the last failure is not recent)."""
    cat = load(credentials.provider, credentials.base_url)
    spec = find(credentials.provider)
    if cat.fresh() or spec is None or spec.list_models is None:
        return cat
    return fetch(credentials, timeout=timeout)


def catalogued() -> list[ProviderSpec]:
    """The providers with a model list of their own, in precedence order."""
    return [s for s in providers() if s.list_models is not None]


def refresh_catalogues(config: Any, *, force: bool = False, only: str | None = None) -> dict[str, Any]:
    """Fetch the catalogue of every provider the config can reach (a key, or a base URL for a local
    server): when stale, or always with `force`. Each provider is asked at the URL its key may go to
    (specs.credentials_for): --base-url is the session provider's, never another's. Never raises;
    returns provider → Catalogue."""
    out: dict[str, Any] = {}
    for spec in catalogued():
        if only and spec.name != only:
            continue
        creds = credentials_for(config, spec)
        if not creds.key and not (force and creds.base_url):
            continue  # no key: nothing to ask (a local server is asked only on an explicit --refresh)
        read = fetch if force else refresh_if_stale
        out[spec.name] = read(creds)
    return out


def refresh_for_start(config: Any) -> None:
    """Before a start: refresh the catalogue of the provider about to be used, if it is stale."""
    from ctxagent.agent.providers.registry import parse_model_name

    try:
        name = config.model or default_model(config)
        provider = parse_model_name(name)[0] if name else ""
    except CtxagentError:
        return  # the start reports a bad model name itself
    if any(s.name == provider for s in catalogued()):
        refresh_catalogues(config, only=provider)
