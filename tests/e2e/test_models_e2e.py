"""A key alone starts ctxagent; the provider's catalogue overrides the registry; deprecated models are
warned about, retired ones refused; `ctxagent models` lists them. Real console script, real SDKs,
the real scripted server (which also serves the catalogue)."""

from __future__ import annotations

import json
from pathlib import Path

NO_KEYS = {"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""}


def _sessions(repo: Path) -> list[Path]:
    return sorted((repo / ".ctxagent" / "sessions").glob("*.jsonl"))


def test_an_anthropic_key_alone_starts_with_the_default_model(repo: Path, scripted_server, ctxagent_run) -> None:
    srv = scripted_server([{"text": "Hello from the default model."}])
    env = {**NO_KEYS, "ANTHROPIC_API_KEY": "sk-ant-test-0000000000000000", "ANTHROPIC_BASE_URL": srv.url}
    out = ctxagent_run(repo, "-p", "hi", "--output", "json", env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"] == "Hello from the default model."
    (req,) = srv.requests()
    assert req["path"] == "/v1/messages" and req["body"]["model"] == "claude-sonnet-5-5"
    doctor = ctxagent_run(repo, "doctor", "--json", env=env)
    model = next(c for c in json.loads(doctor.stdout) if c["check"] == "model")
    assert model["status"] == "ok" and model["detail"].startswith("anthropic:claude-sonnet-5-5")


def test_an_openai_key_alone_and_both_keys(repo: Path, scripted_server, ctxagent_run) -> None:
    srv = scripted_server([{"text": "one"}, {"text": "two"}])
    env = {**NO_KEYS, "OPENAI_API_KEY": "sk-test-0000000000000000", "OPENAI_BASE_URL": srv.url}
    out = ctxagent_run(repo, "-p", "hi", env=env)
    assert out.returncode == 0 and out.stdout == "one\n", out.stderr
    assert srv.requests()[0]["body"]["model"] == "gpt-6.1-sol"
    both = {**env, "ANTHROPIC_API_KEY": "sk-ant-test-0000000000000000", "ANTHROPIC_BASE_URL": srv.url}
    out = ctxagent_run(repo, "-p", "hi", env=both)
    assert out.returncode == 0 and out.stdout == "two\n", out.stderr
    assert srv.requests()[1]["path"] == "/v1/messages"  # both keys: Anthropic's, as documented


def test_a_retired_model_is_refused_naming_its_replacement(repo: Path, scripted_server, ctxagent_run) -> None:
    srv = scripted_server([{"text": "never sent"}])
    out = ctxagent_run(repo, "-p", "hi", "--model", "anthropic:claude-sonnet-4-5", "--base-url", srv.url)
    assert out.returncode == 2
    assert out.stderr.count("was retired on 2026-11-30") == 1 and "anthropic:claude-sonnet-5-5" in out.stderr
    assert srv.requests() == [] and _sessions(repo) == []  # nothing sent, no empty session left behind


def test_the_catalogue_overrides_the_registry(repo: Path, scripted_server, ctxagent_run, read_session) -> None:
    # The provider says Sonnet 5.5 is deprecated (and smaller), and that Haiku 5.5 is retired.
    srv = scripted_server({"turns": [{"text": "still answering"}], "models": [
        {"id": "claude-sonnet-5-5", "max_input_tokens": 300_000, "max_tokens": 32_000, "lifecycle": "deprecated",
         "retires_at": "2099-06-30"},
        {"id": "claude-haiku-5-5", "lifecycle": "retired", "retires_at": "2026-11-01"},
    ]})
    base = ["--base-url", srv.url, "--output", "json"]
    out = ctxagent_run(repo, "-p", "hi", "--model", "anthropic:claude-sonnet-5-5", *base)
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("anthropic:claude-sonnet-5-5 is deprecated and shuts down on 2099-06-30") == 1
    result = json.loads(out.stdout)
    assert result["context"]["window"] == 300_000  # the catalogue's window, not the registry's 1M
    refused = ctxagent_run(repo, "-p", "hi", "--model", "anthropic:claude-haiku-5-5", *base)
    assert refused.returncode == 2 and "was retired" in refused.stderr
    assert len(srv.requests()) == 1  # the retired model was never asked
    # the catalogue Anthropic's URL gave: --base-url is the session provider's (none named: OpenAI-compatible
    # servers'), so the listing names the URL the user set for Anthropic
    listing = ctxagent_run(repo, "models", "--json", "--all", env={"ANTHROPIC_BASE_URL": srv.url})
    rows = {r["model"]: r for r in json.loads(listing.stdout)}
    assert rows["anthropic:claude-sonnet-5-5"]["source"] == "both"
    assert rows["anthropic:claude-haiku-5-5"]["lifecycle"] == "retired"


def test_models_command_lists_registry_and_catalogue(repo: Path, scripted_server, ctxagent_run) -> None:
    srv = scripted_server({"turns": [], "models": [
        {"id": "claude-brand-new", "display_name": "Claude Brand New", "max_input_tokens": 2_000_000, "max_tokens": 128_000},
    ]})
    offline = ctxagent_run(repo, "models", env=NO_KEYS)
    assert offline.returncode == 0
    assert "anthropic:claude-sonnet-5-5 *" in offline.stdout and "openai:gpt-6.1-sol *" in offline.stdout
    assert "claude-sonnet-4-5" not in offline.stdout  # retired: hidden unless --all
    assert "claude-sonnet-4-5" in ctxagent_run(repo, "models", "--all", env=NO_KEYS).stdout
    no_key = ctxagent_run(repo, "models", "--refresh", env=NO_KEYS)
    assert no_key.returncode == 0 and "no ANTHROPIC_API_KEY or OPENAI_API_KEY" in no_key.stderr

    env = {**NO_KEYS, "ANTHROPIC_API_KEY": "sk-ant-test-0000000000000000", "ANTHROPIC_BASE_URL": srv.url}
    fresh = ctxagent_run(repo, "models", "--refresh", "--provider", "anthropic", env=env)
    assert fresh.returncode == 0, fresh.stderr
    assert "anthropic: 1 model listed by the provider" in fresh.stderr
    line = next(ln for ln in fresh.stdout.splitlines() if "claude-brand-new" in ln)
    assert "2,000,000" in line and "128,000" in line and "catalogue" in line
    # the cache serves the next run without asking again
    cached = ctxagent_run(repo, "models", "--json", "--provider", "anthropic", env=env)
    assert any(r["model"] == "anthropic:claude-brand-new" and r["window"] == 2_000_000 for r in json.loads(cached.stdout))
