"""Credentials bound to origins (issue 30, Critical 1): one rule maps a provider to the URL its key may
go to (providers/specs.py `key_url`, `credentials_for`), and every provider ctxagent builds goes
through it — by construction: a key travels only inside a `Credentials` that the rule made, and no
module builds a provider, an SDK client or a catalogue read any other way (the source is read below).

The family: a session on one provider at the user's generic `--base-url`, with another provider's key
also set; every path that builds a provider or reads a catalogue for the other provider (a summary
model, a sub-agent model, `/model`, a resumed log, `ctxagent models --refresh`, doctor, the recorded
endpoint) must send that key to its own provider's URL, or to the URL the user set for that provider."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ctxagent.agent.config import Config, load_config
from ctxagent.agent.providers import specs
from ctxagent.context.errors import ConfigError
from ctxagent.tui.lab.scripted.server import ScriptedServer, key_print

ROOT = Path(__file__).resolve().parents[2]
MINE = "http://127.0.0.1:8123/v1"  # the user's own OpenAI-compatible server (vLLM, Ollama, ...)
ANTHROPIC_KEY, OPENAI_KEY = "sk-ant-test-key-0000000000000000", "sk-test-openai-000000000000000000"
SESSION = "openai:gpt-5.4-mini"
OTHER = "anthropic:claude-haiku-5-5"


def _config(**values: Any) -> Config:
    return Config.model_validate({"model": SESSION, "base_url": MINE, "anthropic_api_key": ANTHROPIC_KEY,
                                  "openai_api_key": OPENAI_KEY, "memory": False, **values})


def _url(config: Config, provider: str) -> str | None:
    return specs.key_url(specs.get(provider), config)


# -- the rule ---------------------------------------------------------------------------------------

RULE = [  # (config values, provider, the URL its key may go to: None = the provider's own)
    ({}, "openai", MINE),  # the session's own provider takes --base-url
    ({}, "anthropic", None),  # another provider never does
    ({"anthropic_base_url": "http://127.0.0.1:9"}, "anthropic", "http://127.0.0.1:9"),  # its own setting does
    ({"model": "anthropic:claude-sonnet-5-5"}, "anthropic", MINE),  # a session on Anthropic: its proxy
    ({"model": "anthropic:claude-sonnet-5-5"}, "openai", None),
    ({"model": "anthropic:claude-sonnet-5-5", "openai_base_url": "http://127.0.0.1:7"}, "openai", "http://127.0.0.1:7"),
    ({"model": "claude-sonnet-5-5"}, "anthropic", MINE),  # a bare name its provider owns
    ({"model": "qwen2.5-coder:7b"}, "openai", MINE),  # a local model of the registry: the local servers' provider
    ({"model": "qwen2.5-coder:7b"}, "anthropic", None),
    ({"model": None}, "openai", MINE),  # no model: --base-url is a local server's (OpenAI-compatible)
    ({"model": None}, "anthropic", None),
    ({"model": "scripted:/tmp/s.json"}, "anthropic", None),
    ({"model": "scripted:/tmp/s.json"}, "openai", None),
    ({"model": "scripted:/tmp/s.json"}, "scripted", None),  # takes no URL at all
]


@pytest.mark.parametrize(("values", "provider", "url"), RULE)
def test_a_key_goes_to_its_own_url_or_one_the_user_set_for_its_provider(values: dict, provider: str,
                                                                         url: str | None) -> None:
    config = _config(**values)
    assert _url(config, provider) == url
    creds = specs.credentials_for(config, provider)
    assert (creds.provider, creds.base_url) == (provider, url)
    assert creds.key == {"anthropic": ANTHROPIC_KEY, "openai": OPENAI_KEY}.get(provider)


def test_the_generic_url_stays_with_the_provider_it_was_given_for() -> None:
    """A sub-agent's config, /model, a resume's model: the config's model changes, the binding does not."""
    config = _config()
    for changed in (config.model_copy(update={"model": OTHER}, deep=True), config.model_copy()):
        changed.model = OTHER  # /model anthropic:… (agent/session_ops.py switch_model assigns it)
        assert _url(changed, "anthropic") is None and _url(changed, "openai") == MINE


def test_layers_bind_the_generic_url_to_the_final_model(tmp_path: Path, _isolated_home: Path) -> None:
    user = _isolated_home / "config"
    user.mkdir()
    (user / "config.toml").write_text(f'model = "{OTHER}"\nbase_url = "{MINE}"\n', encoding="utf-8")
    assert load_config(None).base_url_provider == "anthropic"
    assert load_config(None, {"model": SESSION}).base_url_provider == "openai"  # --model wins, and takes the URL
    (user / "config.toml").write_text('base_url_provider = "anthropic"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown key"):  # never read from a file
        load_config(None)


def test_credentials_carry_a_key_only_from_the_rule() -> None:
    creds = specs.Credentials("anthropic", MINE)
    assert creds.key is None  # the constructor takes no key at all
    with pytest.raises(TypeError):
        specs.Credentials("anthropic", MINE, ANTHROPIC_KEY)  # type: ignore[call-arg]
    keyed = specs.credentials_for(_config(), "anthropic")
    for field, value in (("base_url", MINE), ("key", "x"), ("provider", "openai")):
        with pytest.raises(AttributeError):
            setattr(keyed, field, value)
    with pytest.raises(TypeError):
        dataclasses.replace(keyed, base_url=MINE)  # type: ignore[type-var]
    assert ANTHROPIC_KEY not in repr(keyed) and "[set]" in repr(keyed)


def test_a_provider_is_never_built_with_another_providers_credentials() -> None:
    from ctxagent.agent.providers.registry import make_provider

    with pytest.raises(ConfigError, match="a key goes only to its own provider"):
        make_provider(SESSION, specs.credentials_for(_config(), "anthropic"))


# -- every path that builds a provider or reads a catalogue -----------------------------------------


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, specs.Credentials]]]:
    """Anthropic's spec, registered again with a `make` and a `list_models` that note the credentials
    they were handed (and a provider that sends nothing)."""
    seen: list[tuple[str, specs.Credentials]] = []
    real = specs.get("anthropic")

    def make(model: str, creds: specs.Credentials, max_tokens: int | None) -> Any:
        seen.append(("make", creds))
        return real.make(model, specs.Credentials("anthropic", "http://127.0.0.1:9"), max_tokens)

    def list_models(creds: specs.Credentials, **_: Any) -> list[Any]:
        seen.append(("list_models", creds))
        return []

    order = [s.name for s in specs.providers()]
    saved = {name: specs.unregister(name) for name in order}
    try:
        for name in order:
            spec = saved[name]
            assert spec is not None
            specs.register(dataclasses.replace(spec, make=make, list_models=list_models) if name == "anthropic" else spec)
        yield seen
    finally:
        for name in order:
            specs.unregister(name)
        for name in order:
            spec = saved[name]
            assert spec is not None
            specs.register(spec)


def _summary(config: Config) -> None:
    from ctxagent.agent.factory import summarizer_for

    assert summarizer_for(config, SESSION) is not None


def _subagent(config: Config) -> None:
    from ctxagent.agent.factory import provider_for, subagent_model

    provider_for(config, subagent_model(config, SESSION), 1024)  # what ParentSide.make_provider does


def _model_switch(config: Config) -> None:
    from ctxagent.agent.factory import provider_for

    config.model = OTHER  # /model (session_ops.switch_model), then the agent for it
    provider_for(config, OTHER, 1024)


def _resumed(config: Config) -> None:
    from ctxagent.agent.factory import provider_for

    provider_for(config.model_copy(update={"model": OTHER}, deep=True), OTHER, 1024)  # session.with_session_model


def _catalogue(config: Config) -> None:
    from ctxagent.agent.providers.catalogue import refresh_catalogues

    refresh_catalogues(config, force=True, only="anthropic")


def _warmup(config: Config) -> None:
    from ctxagent.agent.factory import warm_sdk

    warm_sdk(config.model_copy(update={"model": OTHER}, deep=True))


PATHS = {"summary_model": _summary, "subagent_model": _subagent, "/model": _model_switch, "resume": _resumed,
         "catalogue refresh": _catalogue, "warm-up": _warmup}


@pytest.mark.parametrize("own", [None, "http://127.0.0.1:9"], ids=["own URL", "anthropic_base_url"])
@pytest.mark.parametrize("path", list(PATHS))
def test_every_path_sends_the_key_where_the_rule_says(recorded: list, path: str, own: str | None) -> None:
    config = _config(summary_model=OTHER, subagent_model=OTHER, anthropic_base_url=own)
    PATHS[path](config)
    assert recorded, path  # the path did build (or list) for Anthropic
    for _, creds in recorded:
        assert (creds.provider, creds.key, creds.base_url) == ("anthropic", ANTHROPIC_KEY, own), path


def test_doctor_and_the_recorded_endpoint_read_the_same_rule() -> None:
    from ctxagent.agent.session import endpoint_for
    from ctxagent.tui.cli.doctor import model_check

    config = _config()
    assert endpoint_for(config, OTHER).base_url == "" and endpoint_for(config, SESSION).base_url == MINE
    keyless = _config(model="anthropic:claude-sonnet-5-5", base_url=None, anthropic_api_key=None,
                      openai_base_url="http://10.0.0.7:8000/v1")  # another provider's URL makes no key optional
    assert model_check(keyless)[0] == "warn" and "set ANTHROPIC_API_KEY" in model_check(keyless)[2]


def test_a_summary_on_another_provider_reaches_only_that_providers_url() -> None:
    """The real SDK, two loopback servers: the session's (--base-url) and the one the user gave Anthropic."""
    from ctxagent.agent.factory import summarizer_for

    summary = "Decisions:\n- none\nConstraints:\n- none\nChanges:\n- none\nOpen tasks:\n- none\n"
    with ScriptedServer([{"text": "no"}]) as session, ScriptedServer([{"text": summary}]) as anthropic_own:
        config = _config(base_url=session.base_url, summary_model=OTHER, anthropic_base_url=anthropic_own.base_url)
        summarize = summarizer_for(config, SESSION)
        assert summarize is not None and summarize("summarize this") == summary
        assert session.credentials == []
        assert [c["key"] for c in anthropic_own.credentials] == [key_print(ANTHROPIC_KEY)]


def test_a_catalogue_refresh_asks_each_provider_at_its_own_url() -> None:
    """`ctxagent models --refresh --base-url URL`: the session provider's list from URL, Anthropic's from the
    URL the user gave Anthropic — or from Anthropic's own (here: no network, a recorded failure)."""
    from ctxagent.agent.providers.catalogue import refresh_catalogues

    with ScriptedServer({"turns": [], "models": []}) as session, ScriptedServer({"turns": [], "models": []}) as own:
        fetched = refresh_catalogues(_config(base_url=session.base_url, anthropic_base_url=own.base_url), force=True)
        assert set(fetched) == {"anthropic", "openai"} and not fetched["anthropic"].error
        assert {c["key"] for c in session.credentials} == {key_print(OPENAI_KEY)}
        assert {c["key"] for c in own.credentials} == {key_print(ANTHROPIC_KEY)}
        unset = refresh_catalogues(_config(base_url=session.base_url), force=True, only="anthropic")
        # asked at its own URL ("": the provider's own); no network here, so a failure, recorded and never fatal
        assert unset["anthropic"].base_url == "" and unset["anthropic"].error
        assert {c["key"] for c in session.credentials} == {key_print(OPENAI_KEY)}


# -- by construction: no other way to build a provider ----------------------------------------------

PACKAGES = ("agent", "context", "tools", "tui")
# who may name what: a provider class or an SDK client only in the provider modules; a spec's `make`
# only in the factory's make_provider; a spec's `list_models` only in the catalogue; a key into a
# Credentials only in the rule
ALLOWED = {
    "AnthropicProvider": {"agent/providers/specs.py"},
    "OpenAIProvider": {"agent/providers/specs.py"},
    "sdk_client": {"agent/providers/client.py", "agent/providers/anthropic.py", "agent/providers/openai.py"},
    "Anthropic": {"agent/providers/anthropic.py"},
    "OpenAI": {"agent/providers/openai.py"},
    ".make": {"agent/providers/registry.py"},
    "list_models": {"agent/providers/catalogue.py", "agent/providers/specs.py"},
    "__setattr__ key": {"agent/providers/specs.py"},
}


def _calls() -> Iterator[tuple[str, str, int]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                    if name == "make" and isinstance(func, ast.Attribute):
                        name = ".make"  # a spec's make (a local function called `make` is something else)
                    elif name == "__setattr__" and any(isinstance(a, ast.Constant) and a.value == "key" for a in node.args):
                        name = "__setattr__ key"  # a key put into an object past its constructor
                    yield name, rel, node.lineno


def test_no_module_builds_a_provider_but_through_the_rule() -> None:
    found = [(name, rel, line) for name, rel, line in _calls() if name in ALLOWED and rel not in ALLOWED[name]]
    assert found == [], found
    # and the places that may are the ones that do (a renamed call would make this test vacuous)
    used = {(name, rel) for name, rel, _ in _calls() if name in ALLOWED}
    assert (".make", "agent/providers/registry.py") in used and ("__setattr__ key", "agent/providers/specs.py") in used
