"""The provider specs (agent/providers/specs.py): one record per provider that doctor, the provider
factory, the config, the trust rules and the CLI all read; a new spec is a new provider."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ctxagent.agent.config import _ENV, SECRET_FIELDS, Config, load_config
from ctxagent.agent.factory import check_strategy, summarizer_for
from ctxagent.agent.providers import specs
from ctxagent.agent.providers.protocol import TextDelta
from ctxagent.agent.providers.registry import make_provider, model_info, parse_model_name
from ctxagent.agent.trust import SENSITIVE_KEYS
from ctxagent.context.errors import ConfigError
from ctxagent.context.request import Message, Request
from ctxagent.tools.sandbox.environment import command_env
from ctxagent.tui.cli.doctor import model_check
from ctxagent.tui.lab.scripted.provider import ScriptedProvider
from ctxagent.tui.lab.scripted.spec import SCRIPTED

KEYED = [s for s in specs.providers() if s.key_env]
BASE_URLS = [None, "https://proxy.example.com/v1", "http://10.0.0.7:8000", "http://127.0.0.1:9",
             "http://localhost:11434", "http://[::1]:9"]


def _registry_verdict(label: str, cfg: Config) -> str | None:
    """None when the provider factory builds the provider; else its ConfigError's message."""
    spec = specs.get(parse_model_name(label)[0])
    try:
        make_provider(label, specs.credentials_for(cfg, spec), max_tokens=100)
    except ConfigError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("spec", KEYED, ids=lambda s: s.name)
@pytest.mark.parametrize("base", BASE_URLS)
@pytest.mark.parametrize("field", ["base_url", "own"])
def test_doctor_and_the_factory_apply_the_same_key_rule(spec: specs.ProviderSpec, base: str | None, field: str) -> None:
    label = f"{spec.name}:{spec.start_model}"
    values = {} if base is None else {"base_url" if field == "base_url" else str(spec.base_url_field): base}
    for key in (None, "sk-test-0000000000000000"):
        cfg = Config.model_validate({"model": label, **values, **({str(spec.key_field): key} if key else {})})
        refused = _registry_verdict(label, cfg)
        status, title, detail = model_check(cfg)
        assert title == "model"
        if refused is None:
            assert status == "ok", detail
        else:
            assert (status, detail) == ("warn", refused)  # the same words, from the one rule
        creds = specs.credentials_for(cfg, spec)  # the session's own provider: the generic URL is its
        assert (creds.provider, creds.key, creds.base_url) == (spec.name, key, base)
        assert refused == spec.key_problem(spec.start_model, creds)
        if key:
            assert refused is None


def test_a_keyless_remote_anthropic_url_is_refused_and_a_loopback_one_accepted_by_both() -> None:
    label = f"anthropic:{specs.ANTHROPIC.start_model}"
    remote = Config(model=label, base_url="https://user:secret@proxy.example.com")
    refused = _registry_verdict(label, remote)
    assert refused is not None and "set ANTHROPIC_API_KEY" in refused and "proxy.example.com is not a loopback" in refused
    assert "secret" not in refused  # the host only: a URL may carry a password
    assert model_check(remote) == ("warn", "model", refused)
    local = Config(model=label, anthropic_base_url="http://127.0.0.1:9")
    assert _registry_verdict(label, local) is None and model_check(local)[0] == "ok"


def test_openai_compatible_servers_of_your_own_need_no_key_wherever_they_run() -> None:
    # The one rule per provider: Ollama or vLLM on another machine is the reason OpenAI's is "any base URL".
    label = "openai:qwen2.5-coder:7b"
    for cfg in (Config(model=label, base_url="http://10.0.0.7:8000"), Config(model=label, openai_base_url="http://127.0.0.1:1")):
        assert _registry_verdict(label, cfg) is None and model_check(cfg)[0] == "ok"
    bare = Config(model=label)
    assert model_check(bare) == ("warn", "model", _registry_verdict(label, bare))


def test_every_spec_field_is_a_config_field_and_its_secrets_are_kept_secret() -> None:
    for spec in specs.providers():
        for field in (spec.key_field, spec.base_url_field):
            if field is not None:
                assert field in Config.model_fields, (spec.name, field)
                assert field in SENSITIVE_KEYS  # a repository may not set it until trusted
        if spec.key_field:
            assert spec.key_field in SECRET_FIELDS and _ENV[str(spec.key_env)] == spec.key_field
            assert spec.key_env not in command_env({spec.key_env: "k"})  # never in a command's environment
        if spec.base_url_field:
            assert _ENV[str(spec.base_url_env)] == spec.base_url_field
    cfg = load_config(None, env={"ANTHROPIC_API_KEY": "sk-ant-a", "OPENAI_BASE_URL": "http://127.0.0.1:1"})
    assert cfg.anthropic_api_key == "sk-ant-a" and cfg.openai_base_url == "http://127.0.0.1:1"
    assert cfg.secrets() == ["sk-ant-a"] and cfg.redacted()["anthropic_api_key"] == "[redacted]"


def test_each_built_in_spec_makes_its_own_provider(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text('[{"text": "hi"}]', encoding="utf-8")
    for spec in specs.BUILTIN_PROVIDERS:
        model = str(script) if not spec.uses_registry else spec.start_model
        provider = spec.make(model, specs.Credentials(spec.name, "http://127.0.0.1:9"), 321)
        assert provider.name == spec.name and provider.model == model
        assert getattr(provider, "key_env", None) == spec.key_env  # the key named in an authentication error
        assert getattr(provider, "max_tokens", None) == 321


def test_importing_the_specs_loads_no_sdk() -> None:
    code = ("import sys, ctxagent.agent.providers.specs, ctxagent.agent.providers.registry, ctxagent.agent.config, "
            "ctxagent.agent.providers.catalogue\n"
            "print(sorted(m for m in ('anthropic', 'openai', 'httpx2', 'httpx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def _echo(model: str, credentials: specs.Credentials, max_tokens: int | None) -> ScriptedProvider:
    provider = ScriptedProvider([{"text": f"echo {model}"}], max_tokens=max_tokens)
    provider.name = "echo"  # a test provider borrowing the scripted one's code
    return provider


@pytest.fixture
def echo_spec() -> Iterator[specs.ProviderSpec]:
    spec = specs.register(specs.ProviderSpec(name="echo", title="Echo", make=_echo,
                                             bare_names=re.compile(r"^echo-"), summary_sibling=False))
    try:
        yield spec
    finally:
        specs.unregister("echo")


def test_a_new_spec_is_a_new_provider(echo_spec: specs.ProviderSpec) -> None:
    assert parse_model_name("echo:回声-1") == ("echo", "回声-1")
    assert parse_model_name("ECHO:x") == ("echo", "x") and parse_model_name("echo-7") == ("echo", "echo-7")
    provider = make_provider("echo:回声-1", max_tokens=50)
    text = "".join(e.text for e in provider.stream(Request("", [Message("user", "hi")], [])) if isinstance(e, TextDelta))
    assert text == "echo 回声-1"
    cfg = Config(model="echo:回声-1")
    assert model_check(cfg) == ("ok", "model", "echo:回声-1")  # no key variable: no key needed
    assert summarizer_for(cfg, "echo:回声-1") is None
    assert model_info("echo", "回声-1").known is False
    with pytest.raises(ConfigError, match="needs an anthropic: model"):
        check_strategy("anthropic-clear", "echo:x")
    specs.unregister("echo")
    with pytest.raises(ConfigError, match="cannot tell the provider"):
        parse_model_name("echo:x")


def test_a_provider_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="already registered"):
        specs.register(specs.ANTHROPIC)
    with pytest.raises(ValueError, match="lower-case"):
        specs.register(specs.ProviderSpec(name="Bad Name", title="x", make=_echo))
    assert [s.name for s in specs.providers()][:3] == ["anthropic", "openai", "scripted"]  # precedence


def test_a_repository_may_not_pick_a_scripted_model_until_trusted(tmp_path: Path) -> None:
    from ctxagent.agent.trust import split_untrusted

    kept, ignored = split_untrusted({"model": " Scripted:/tmp/s.json", "max_steps": 3}, tmp_path, "repo")
    assert kept == {"max_steps": 3} and [i.reason for i in ignored] == [SCRIPTED.untrusted_reason]
    kept, ignored = split_untrusted({"model": "openai:gpt-5-mini"}, tmp_path, "repo")
    assert kept == {"model": "openai:gpt-5-mini"} and ignored == []
