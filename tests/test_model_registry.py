"""Model names, the registry data file, costs, the summary sibling, and the provider factory."""

from __future__ import annotations

import datetime as dt
import tomllib
from importlib import resources

import pytest
from ctxagent.agent.providers import specs
from ctxagent.agent.providers.anthropic import AnthropicProvider
from ctxagent.agent.providers.catalogue import CatalogueModel
from ctxagent.agent.providers.openai import OpenAIProvider
from ctxagent.agent.providers.registry import (
    TOKENIZERS,
    cheaper_sibling,
    cost_usd,
    lifecycle_problem,
    load_registry,
    make_provider,
    model_info,
    parse_model_name,
)
from ctxagent.context.errors import ConfigError
from ctxagent.context.request import Usage
from ctxagent.tui.lab.scripted.provider import ScriptedProvider


@pytest.mark.parametrize(("name", "expected"), [
    ("anthropic:claude-sonnet-5-5", ("anthropic", "claude-sonnet-5-5")),
    ("openai:gpt-6.1-sol", ("openai", "gpt-6.1-sol")),
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
    for required in ("claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5", "claude-opus-4-6", "claude-sonnet-4-6",
                     "claude-haiku-4-5", "claude-sonnet-4-5", "gpt-6.1-sol", "gpt-6-luna", "gpt-5.4-mini", "gpt-5",
                     "gpt-5-mini", "gpt-4.1", "gpt-4o", "o3", "o4-mini", "llama3.1", "qwen2.5-coder",
                     "deepseek-coder", "mistral"):
        assert required in models, required
    for name, entry in models.items():
        assert entry["tokenizer"] in TOKENIZERS, name
        assert entry["window"] >= entry["max_output"] > 0, name
        assert entry["provider"] in ("anthropic", "openai"), name
        if name.startswith("claude"):
            assert entry["window"] in (200000, 1000000), name
        if entry.get("sibling"):
            assert entry["sibling"] in models, name
        lifecycle = entry.get("lifecycle", "active")
        assert lifecycle in ("active", "deprecated", "retired"), name
        if lifecycle != "active":  # a model on its way out names where to go, and that one is current
            assert models[entry["replacement"]].get("lifecycle", "active") == "active", name
    for spec in specs.providers():  # each provider's start model (providers/specs.py) is one of its entries
        if spec.start_model:
            start = models[spec.start_model]
            assert start["provider"] == spec.name and start.get("lifecycle", "active") == "active", spec.name
            assert start["prices"]["input"] > 0
    assert load_registry()["models"].keys() == models.keys()


def test_registry_knows_every_model_the_installed_anthropic_sdk_knows() -> None:
    """The SDK's model list and deprecation table are the first thing to go stale: when the SDK is
    upgraded, this test names what the registry must learn."""
    import typing

    from anthropic._data import DEPRECATED_MODELS
    from anthropic.types import model as sdk_model

    literal = next(a for a in typing.get_args(sdk_model.Model) if typing.get_origin(a) is typing.Literal)
    for name in typing.get_args(literal):
        info = model_info("anthropic", name)
        assert info.known, f"{name} (in the anthropic SDK) is missing from models.toml"
    months = {m: i for i, m in enumerate(("January February March April May June July August September "
                                          "October November December").split(), 1)}
    for name, when in DEPRECATED_MODELS.items():
        month, day, year = when.replace(",", "").split()
        info = model_info("anthropic", name)
        assert info.lifecycle in ("deprecated", "retired"), name
        assert info.retires == dt.date(int(year), months[month], int(day.rstrip("stndrh"))), name


def test_openai_shutdown_dates_match_the_installed_openai_sdk() -> None:
    """The openai SDK documents shutdown dates under ChatModel ("Deprecated values"): every registry
    model listed there carries that date, and none of the registry's active ones is listed."""
    import inspect
    import re

    from openai.types.shared import chat_model

    doc = inspect.getsource(chat_model).split("Deprecated values:", 1)[1]
    dated: dict[str, dt.date] = {}
    for block in re.split(r"\n- ", doc):
        m = re.search(r"shutdown\s+date:\s+(\d{4}-\d{2}-\d{2})", block)
        if m:
            for name in re.findall(r'"([^"]+)"', block.split(":", 1)[0]):
                dated[name] = dt.date.fromisoformat(m.group(1))
    assert dated["gpt-5-mini"] == dt.date(2026, 12, 11)  # the parse works
    for name, entry in load_registry()["models"].items():
        if entry["provider"] != "openai" or not name.startswith(("gpt", "o")):
            continue
        if name in dated:
            assert entry.get("retires") == dated[name], name
            assert entry.get("lifecycle") in ("deprecated", "retired"), name
        else:
            assert entry.get("lifecycle", "active") == "active", name


def test_model_info_known_dated_and_tagged_names() -> None:
    sonnet = model_info("anthropic", "claude-sonnet-5-5")
    assert sonnet.known and sonnet.window == 1_000_000 and sonnet.tokenizer == "cl100k_base"
    assert (sonnet.prices.input, sonnet.prices.output, sonnet.prices.cache_read, sonnet.prices.cache_write) == (
        2.0, 10.0, 0.10, 2.5)
    assert model_info("anthropic", "claude-sonnet-4-5-20250929").name == "claude-sonnet-4-5"
    assert model_info("anthropic", "claude-opus-4-5-20251101").name == "claude-opus-4-5"
    assert model_info("openai", "gpt-4o-mini-2024-07-18").name == "gpt-4o-mini"
    assert model_info("openai", "gpt-5.4-mini-2026-03-17").name == "gpt-5.4-mini"
    assert model_info("openai", "gpt-4.1-mini").name == "gpt-4.1-mini"
    assert model_info("openai", "gpt-5.4-mini").tokenizer == "o200k_base"
    assert model_info("openai", "qwen2.5-coder:7b").name == "qwen2.5-coder"
    assert model_info("openai", "meta-llama/Llama-3.1-8B-Instruct").name == "llama3.1"
    local = model_info("openai", "llama3.1:70b")
    assert local.known and local.window == 131072 and local.prices.input == 0


def test_a_newer_version_is_not_taken_for_an_older_one() -> None:
    # "gpt-5.3-…" is not gpt-5, "claude-opus-4-9" is not claude-opus-4 (= 4-0): unknown, not misattributed
    assert model_info("openai", "gpt-5.3-chat-latest").name == ""
    assert model_info("anthropic", "claude-opus-4-9").name == ""
    assert model_info("anthropic", "claude-sonnet-4").name == "claude-sonnet-4-0"


def test_lifecycle_on_a_date_and_the_problem_it_names() -> None:
    day = dt.date(2026, 12, 1)
    assert model_info("anthropic", "claude-sonnet-5-5").lifecycle_on(day) == "active"
    assert lifecycle_problem(model_info("anthropic", "claude-sonnet-5-5"), "anthropic:claude-sonnet-5-5", day) is None
    retired = lifecycle_problem(model_info("anthropic", "claude-sonnet-4-5"), "anthropic:claude-sonnet-4-5", day)
    assert retired == ("retired", "anthropic:claude-sonnet-4-5 was retired on 2026-11-30 and no longer answers: "
                                  "use --model anthropic:claude-sonnet-5-5")
    state, message = lifecycle_problem(model_info("openai", "gpt-5-mini"), "openai:gpt-5-mini", day)  # type: ignore[misc]
    assert state == "deprecated" and "shuts down on 2026-12-11" in message and "openai:gpt-5.4-mini" in message
    # the announced day comes: the deprecated model counts as retired from then on
    assert model_info("openai", "gpt-5-mini").lifecycle_on(dt.date(2026, 12, 11)) == "retired"
    assert model_info("anthropic", "claude-opus-4-5").lifecycle_on(day) == "deprecated"


def test_the_catalogue_overrides_the_registry() -> None:
    listed = {
        "claude-sonnet-5-5": CatalogueModel("claude-sonnet-5-5", window=900_000, max_output=32_000, lifecycle="deprecated",
                                            retires=dt.date(2027, 6, 1), dated=False),
        "claude-brand-new": CatalogueModel("claude-brand-new", window=2_000_000, max_output=100_000, lifecycle="active"),
        "claude-sonnet-4-5": CatalogueModel("claude-sonnet-4-5", lifecycle="deprecated", retires=dt.date(2026, 11, 30),
                                            dated=False),
        "o4-mini": CatalogueModel("o4-mini"),  # OpenAI lists it, saying nothing about its lifecycle
    }
    info = model_info("anthropic", "claude-sonnet-5-5", catalogue=listed)
    assert (info.window, info.max_output, info.lifecycle, info.source) == (900_000, 32_000, "deprecated", "catalogue")
    assert info.prices.input == 2.0  # prices stay the registry's: no catalogue has them
    new = model_info("anthropic", "claude-brand-new", catalogue=listed)
    assert new.known and new.window == 2_000_000
    # Anthropic: a past retirement date on a deprecated model is overdue, not retired — lifecycle decides
    assert model_info("anthropic", "claude-sonnet-4-5", catalogue=listed).lifecycle_on(dt.date(2026, 12, 1)) == "deprecated"
    # OpenAI still lists a model we thought retired: it is served, so it is not refused
    assert model_info("openai", "o4-mini", catalogue=listed).lifecycle_on(dt.date(2026, 12, 1)) == "deprecated"
    assert model_info("openai", "o4-mini").lifecycle_on(dt.date(2026, 12, 1)) == "retired"


def test_unknown_models_get_the_default_window() -> None:
    info = model_info("openai", "my-finetune", default_window=32000)
    assert not info.known and info.window == 32000 and info.tokenizer == "heuristic"
    assert model_info("openai", "gpt-9-ultra").tokenizer == "o200k_base"
    newer_claude = model_info("anthropic", "claude-sonnet-9", default_window=1000)
    assert not newer_claude.known and newer_claude.window == 200000
    scripted = model_info("scripted", "/tmp/s.json", default_window=50000)
    assert not scripted.known and scripted.window == 50000


def test_cost_usd() -> None:
    info = model_info("anthropic", "claude-sonnet-4-6")
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read=2_000_000, cache_write=400_000)
    assert cost_usd(info, usage) == pytest.approx(3.0 + 1.5 + 0.6 + 1.5)
    assert cost_usd(info, Usage(input_tokens=500_000)) == pytest.approx(1.5)
    assert cost_usd(model_info("openai", "llama3.1"), usage) == 0.0


def test_cost_usd_long_context_rate() -> None:
    sol = model_info("openai", "gpt-6.1-sol")
    assert cost_usd(sol, Usage(input_tokens=272_000, output_tokens=1000)) == pytest.approx((272_000 * 2.0 + 1000 * 10.0) / 1e6)
    # one token over the threshold: the whole request at the long-context rate
    assert cost_usd(sol, Usage(input_tokens=272_001, output_tokens=1000)) == pytest.approx((272_001 * 4.0 + 1000 * 15.0) / 1e6)


def test_cheaper_sibling() -> None:
    assert cheaper_sibling("anthropic", "claude-opus-5-5") == "claude-haiku-5-5"
    assert cheaper_sibling("anthropic", "claude-sonnet-5-5-20261001") == "claude-haiku-5-5"
    assert cheaper_sibling("openai", "gpt-6.1-sol") == "gpt-6-luna"
    assert cheaper_sibling("openai", "gpt-4o") == "gpt-4o-mini"
    assert cheaper_sibling("openai", "gpt-6-luna") == "gpt-6-luna"
    assert cheaper_sibling("openai", "llama3.1:8b") == "llama3.1:8b"
    assert cheaper_sibling("scripted", "/tmp/s.json") == "/tmp/s.json"
    assert specs.get("anthropic").start_model == "claude-sonnet-5-5" and specs.get("openai").start_model == "gpt-6.1-sol"


def test_make_provider_key_rules(tmp_path: object) -> None:
    from ctxagent.agent.config import Config
    from ctxagent.agent.providers.specs import Credentials, credentials_for

    with pytest.raises(ConfigError, match="set ANTHROPIC_API_KEY"):
        make_provider("anthropic:claude-haiku-4-5")
    with pytest.raises(ConfigError, match="set ANTHROPIC_API_KEY"):
        make_provider("anthropic:claude-haiku-4-5", Credentials("anthropic", "https://proxy.example.com"))
    with pytest.raises(ConfigError, match=r"set OPENAI_API_KEY, or use --base-url"):
        make_provider("gpt-5-mini", Credentials("openai"))
    keyed = credentials_for(Config(anthropic_api_key="sk-ant-x"), "anthropic")
    a = make_provider("claude-haiku-4-5", keyed, max_tokens=1234)
    assert isinstance(a, AnthropicProvider) and a.max_tokens == 1234 and a.base_url == "https://api.anthropic.com"
    o = make_provider("openai:llama3.1", Credentials("openai", "http://127.0.0.1:11434"))
    assert isinstance(o, OpenAIProvider) and o.base_url == "http://127.0.0.1:11434/v1"
    with pytest.raises(ConfigError, match="cannot be built with anthropic's credentials"):
        make_provider("openai:gpt-5-mini", keyed)  # a key goes only to its own provider


def test_make_provider_scripted(tmp_path: object) -> None:
    from pathlib import Path

    script = Path(str(tmp_path)) / "s.json"
    script.write_text('[{"text": "hi"}]', encoding="utf-8")
    p = make_provider(f"scripted:{script}")
    assert isinstance(p, ScriptedProvider) and p.model == str(script)
    with pytest.raises(ConfigError, match="script not found"):
        make_provider(f"scripted:{script}.missing")
