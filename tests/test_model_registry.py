"""Model names, the registry data file, costs, the summary sibling, and the provider factory."""

from __future__ import annotations

import tomllib
from importlib import resources

import pytest
from ctxagent.agent.providers.anthropic import AnthropicProvider
from ctxagent.agent.providers.base import Usage
from ctxagent.agent.providers.openai import OpenAIProvider
from ctxagent.agent.providers.registry import (
    TOKENIZERS,
    cheaper_sibling,
    cost_usd,
    load_registry,
    make_provider,
    model_info,
    parse_model_name,
)
from ctxagent.agent.providers.scripted import ScriptedProvider
from ctxagent.context.errors import ConfigError


@pytest.mark.parametrize(("name", "expected"), [
    ("anthropic:claude-sonnet-4-5", ("anthropic", "claude-sonnet-4-5")),
    ("openai:gpt-5-mini", ("openai", "gpt-5-mini")),
    ("openai:qwen2.5-coder:7b", ("openai", "qwen2.5-coder:7b")),
    ("scripted:/tmp/a b/script.json", ("scripted", "/tmp/a b/script.json")),
    ("claude-haiku-4-5", ("anthropic", "claude-haiku-4-5")),
    ("gpt-4.1", ("openai", "gpt-4.1")),
    ("o3", ("openai", "o3")),
    ("o4-mini", ("openai", "o4-mini")),
    ("llama3.1:8b", ("openai", "llama3.1:8b")),
    ("  anthropic:claude-opus-4-5 ", ("anthropic", "claude-opus-4-5")),
])
def test_parse_model_name(name: str, expected: tuple[str, str]) -> None:
    assert parse_model_name(name) == expected


@pytest.mark.parametrize("bad", ["", "anthropic:", "mystery-model-9000"])
def test_parse_model_name_rejects_what_it_cannot_place(bad: str) -> None:
    with pytest.raises(ConfigError):
        parse_model_name(bad)


def test_data_file_is_complete_and_consistent() -> None:
    raw = tomllib.loads(resources.files("ctxagent.agent").joinpath("data/models.toml").read_text("utf-8"))
    models = raw["models"]
    for required in ("claude-opus-4-5", "claude-sonnet-4-5", "claude-haiku-4-5", "gpt-5", "gpt-5-mini",
                     "gpt-5-nano", "gpt-4.1", "gpt-4.1-mini", "gpt-4o", "gpt-4o-mini", "o3", "o4-mini",
                     "llama3.1", "qwen2.5-coder", "deepseek-coder", "mistral"):
        assert required in models, required
    for name, entry in models.items():
        assert entry["tokenizer"] in TOKENIZERS, name
        assert entry["window"] >= entry["max_output"] > 0, name
        assert entry["provider"] in ("anthropic", "openai"), name
        if name.startswith("claude"):
            assert entry["window"] == 200000 and entry["prices"]["input"] > 0, name
        if entry.get("sibling"):
            assert entry["sibling"] in models, name
    assert load_registry()["models"].keys() == models.keys()


def test_model_info_known_dated_and_tagged_names() -> None:
    sonnet = model_info("anthropic", "claude-sonnet-4-5")
    assert sonnet.known and sonnet.window == 200000 and sonnet.tokenizer == "cl100k_base"
    assert (sonnet.prices.input, sonnet.prices.output, sonnet.prices.cache_read, sonnet.prices.cache_write) == (
        3.0, 15.0, 0.30, 3.75)
    assert model_info("anthropic", "claude-sonnet-4-5-20250929").name == "claude-sonnet-4-5"
    assert model_info("openai", "gpt-4o-mini-2024-07-18").name == "gpt-4o-mini"
    assert model_info("openai", "gpt-4.1-mini").name == "gpt-4.1-mini"
    assert model_info("openai", "gpt-5-mini").tokenizer == "o200k_base"
    assert model_info("openai", "qwen2.5-coder:7b").name == "qwen2.5-coder"
    assert model_info("openai", "meta-llama/Llama-3.1-8B-Instruct").name == "llama3.1"
    local = model_info("openai", "llama3.1:70b")
    assert local.known and local.window == 131072 and local.prices.input == 0


def test_unknown_models_get_the_default_window() -> None:
    info = model_info("openai", "my-finetune", default_window=32000)
    assert not info.known and info.window == 32000 and info.tokenizer == "heuristic"
    assert model_info("openai", "gpt-9-ultra").tokenizer == "o200k_base"
    newer_claude = model_info("anthropic", "claude-sonnet-9", default_window=1000)
    assert not newer_claude.known and newer_claude.window == 200000
    scripted = model_info("scripted", "/tmp/s.json", default_window=50000)
    assert not scripted.known and scripted.window == 50000


def test_cost_usd() -> None:
    info = model_info("anthropic", "claude-sonnet-4-5")
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read=2_000_000, cache_write=400_000)
    assert cost_usd(info, usage) == pytest.approx(3.0 + 1.5 + 0.6 + 1.5)
    assert cost_usd(info, {"input_tokens": 500_000}) == pytest.approx(1.5)
    assert cost_usd(model_info("openai", "llama3.1"), usage) == 0.0


def test_cheaper_sibling() -> None:
    assert cheaper_sibling("anthropic", "claude-opus-4-5") == "claude-haiku-4-5"
    assert cheaper_sibling("anthropic", "claude-sonnet-4-5-20250929") == "claude-haiku-4-5"
    assert cheaper_sibling("openai", "gpt-5") == "gpt-5-mini"
    assert cheaper_sibling("openai", "gpt-4o") == "gpt-4o-mini"
    assert cheaper_sibling("openai", "gpt-5-mini") == "gpt-5-mini"
    assert cheaper_sibling("openai", "llama3.1:8b") == "llama3.1:8b"
    assert cheaper_sibling("scripted", "/tmp/s.json") == "/tmp/s.json"


def test_make_provider_key_rules(tmp_path: object) -> None:
    with pytest.raises(ConfigError, match="set ANTHROPIC_API_KEY"):
        make_provider("anthropic:claude-haiku-4-5", api_key=None, base_url=None)
    with pytest.raises(ConfigError, match="set ANTHROPIC_API_KEY"):
        make_provider("anthropic:claude-haiku-4-5", api_key="", base_url="https://proxy.example.com")
    with pytest.raises(ConfigError, match=r"set OPENAI_API_KEY, or use --base-url"):
        make_provider("gpt-5-mini", api_key=None, base_url=None)
    a = make_provider("claude-haiku-4-5", api_key="sk-ant-x", base_url=None, max_tokens=1234)
    assert isinstance(a, AnthropicProvider) and a.max_tokens == 1234 and a.base_url == "https://api.anthropic.com"
    o = make_provider("openai:llama3.1", api_key=None, base_url="http://127.0.0.1:11434")
    assert isinstance(o, OpenAIProvider) and o.base_url == "http://127.0.0.1:11434/v1"


def test_make_provider_scripted(tmp_path: object) -> None:
    from pathlib import Path

    script = Path(str(tmp_path)) / "s.json"
    script.write_text('[{"text": "hi"}]', encoding="utf-8")
    p = make_provider(f"scripted:{script}")
    assert isinstance(p, ScriptedProvider) and p.model == str(script)
    with pytest.raises(ConfigError, match="script not found"):
        make_provider(f"scripted:{script}.missing")
