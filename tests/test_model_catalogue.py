"""The providers' model catalogues: served by the scripted server in both wire formats, read through
the real SDKs, cached in the user state dir, never fatal."""

from __future__ import annotations

import datetime as dt
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import anthropic
import openai
import pytest
from ctxagent.agent.config import Config
from ctxagent.agent.providers import catalogue
from ctxagent.agent.providers.specs import Credentials, credentials_for
from ctxagent.tui.lab.scripted.server import ScriptedServer

MODELS = [
    {"id": "claude-sonnet-5-5", "display_name": "Claude Sonnet 5.5", "max_input_tokens": 1_000_000, "max_tokens": 64_000},
    {"id": "claude-brand-new", "max_input_tokens": 2_000_000, "max_tokens": 128_000},
    {"id": "claude-on-the-way-out", "lifecycle": "deprecated", "retires_at": "2099-01-31"},
    {"id": "claude-gone", "lifecycle": "retired", "retires_at": "2026-01-31"},
]


def test_anthropic_sdk_reads_the_catalogue_with_lifecycle_filter_and_paging() -> None:
    with ScriptedServer({"turns": [], "models": MODELS}) as srv:
        client = anthropic.Anthropic(api_key="k", base_url=srv.base_url, max_retries=0)
        default = [m.id for m in client.models.list()]  # active and deprecated, as the API does
        assert default == ["claude-sonnet-5-5", "claude-brand-new", "claude-on-the-way-out"]
        everything = list(client.models.list(limit=1, lifecycle=["active", "deprecated", "retired"]))  # auto-paged
        assert [m.id for m in everything] == [m["id"] for m in MODELS]
        first = everything[0]
        assert (first.max_input_tokens, first.max_tokens, first.lifecycle, first.display_name) == (
            1_000_000, 64_000, "active", "Claude Sonnet 5.5")
        gone = client.models.retrieve("claude-gone")
        assert gone.lifecycle == "retired" and gone.retires_at is not None and gone.retires_at.date() == dt.date(2026, 1, 31)
        with pytest.raises(anthropic.NotFoundError):
            client.models.retrieve("claude-nope")
        assert srv.requests == []  # catalogue reads consume no scripted turn


def test_openai_sdk_reads_the_catalogue() -> None:
    with ScriptedServer({"turns": [{"text": "hi"}], "models": MODELS}) as srv:
        client = openai.OpenAI(api_key="k", base_url=srv.base_url + "/v1", max_retries=0)
        listed = {m.id: m for m in client.models.list()}
        assert set(listed) == {"claude-sonnet-5-5", "claude-brand-new", "claude-on-the-way-out"}  # retired: gone
        assert listed["claude-on-the-way-out"].shutdown_date == "2099-01-31"
        assert client.models.retrieve("claude-brand-new").owned_by == "scripted"
        with pytest.raises(openai.NotFoundError):
            client.models.retrieve("claude-gone")
        assert len(srv.catalogue_requests) == 3 and srv.requests == []


def _creds(provider: str, key: str, base: str) -> Credentials:
    """`provider`'s key bound to `base` the way a user binds it: that provider's own base URL setting."""
    return credentials_for(Config.model_validate({f"{provider}_api_key": key, f"{provider}_base_url": base}), provider)


def test_fetch_caches_without_the_key(_isolated_home: Path) -> None:
    with ScriptedServer({"turns": [], "models": MODELS}) as srv:
        cat = catalogue.fetch(_creds("anthropic", "sk-ant-secret-key-123456", srv.base_url))
        assert cat.error == "" and set(cat.models) == {m["id"] for m in MODELS}
        assert cat.models["claude-brand-new"].window == 2_000_000
        assert cat.models["claude-gone"].lifecycle == "retired" and cat.models["claude-gone"].dated is False
        path = catalogue.cache_path("anthropic", srv.base_url)
        assert path.is_relative_to(_isolated_home)
        assert "sk-ant-secret" not in path.read_text()
        again = catalogue.load("anthropic", srv.base_url)
        assert again.models == cat.models and again.fresh()
        # fresh: a second start does not ask again
        catalogue.refresh_if_stale(_creds("anthropic", "k", srv.base_url))
        assert len(srv.catalogue_requests) == 1
        openai_cat = catalogue.fetch(_creds("openai", "k", srv.base_url))
        assert openai_cat.models["claude-on-the-way-out"].retires == dt.date(2099, 1, 31)
        assert openai_cat.models["claude-sonnet-5-5"].lifecycle == ""  # OpenAI's list says nothing more


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_offline_is_never_fatal_and_not_retried_at_once() -> None:
    base = f"http://127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    cat = catalogue.refresh_if_stale(_creds("anthropic", "k", base), timeout=1.0)
    assert cat.models == {} and "Connection" in cat.error and cat.failed_at is not None
    assert catalogue.load("anthropic", base).fresh()  # the failure is remembered: the next start does not wait
    assert time.monotonic() - started < 30  # bounded by the timeout, not hanging


class _Garbage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        body = b'{"data": [{"id": 5, "lifecycle": "sideways"}], "has_more": tru'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def test_a_garbled_catalogue_and_a_corrupt_cache_are_not_fatal(_isolated_home: Path) -> None:
    httpd = HTTPServer(("127.0.0.1", 0), _Garbage)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{httpd.server_address[1]}"
        for provider in ("anthropic", "openai"):
            cat = catalogue.fetch(_creds(provider, "k", base))
            assert cat.models == {} and cat.error, provider
    finally:
        httpd.shutdown()
        httpd.server_close()
    with ScriptedServer({"turns": [], "models": MODELS}) as srv:
        catalogue.fetch(_creds("anthropic", "k", srv.base_url))
    path = catalogue.cache_path("anthropic", srv.base_url)
    path.write_text("{not json")
    assert catalogue.load("anthropic", srv.base_url).models == {}
    path.write_text(json.dumps({"models": [{"no": "id"}]}))
    assert catalogue.load("anthropic", srv.base_url).models == {}
