"""A newcomer's second hour, the smaller things of the command line (issue 24, item 10): `config`
names the model a key implies, `inspect --last` (and its last step by default), `--help` placeholders
named after their flags, and `models --refresh --provider` asks that provider alone. The real
`ctxagent` console script, the real scripted server as a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

NO_KEYS = {"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "", "CTXAGENT_MODEL": ""}


def test_config_names_the_model_a_key_implies(repo: Path, ctxagent_run) -> None:
    out = ctxagent_run(repo, "config", env={**NO_KEYS, "ANTHROPIC_API_KEY": "sk-ant-test-0000000000000000"})
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    assert shown["model"] == "anthropic:claude-sonnet-5-5"
    assert "implied by the anthropic API key (ANTHROPIC_API_KEY)" in shown["origins"]["model"]
    assert "sk-ant-test-0000000000000000" not in out.stdout  # the key itself stays redacted
    none = json.loads(ctxagent_run(repo, "config", env=NO_KEYS).stdout)
    assert none["model"] is None and "model" not in none["origins"]  # no key: nothing is implied
    chosen = json.loads(ctxagent_run(repo, "--model", "openai:gpt-5.4-mini", "config",
                                     env={**NO_KEYS, "ANTHROPIC_API_KEY": "sk-ant-test-0000000000000000"}).stdout)
    assert chosen["model"] == "openai:gpt-5.4-mini" and chosen["origins"]["model"] == "flags"


def test_inspect_last_and_its_last_step(repo: Path, scripted_server, ctxagent_run) -> None:
    srv = scripted_server([{"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
                           {"text": "It subtracts."}])
    run = ctxagent_run(repo, "-p", "what does add do?", "--model", "openai:gpt-5.4-mini", "--base-url", srv.url,
                       "--output", "json")
    assert run.returncode == 0, run.stderr
    session = json.loads(run.stdout)["session"]
    last = ctxagent_run(repo, "inspect", "--last", "--json")
    assert last.returncode == 0, last.stderr
    assert json.loads(last.stdout)["report"]["step"] == 2  # the latest session's last step
    first = ctxagent_run(repo, "inspect", session[:12], "--step", "1")
    assert first.returncode == 0 and first.stdout.startswith("step 1 ·")
    assert "identical to what was sent" in first.stdout


def test_help_placeholders_are_named_after_their_flags(repo: Path, ctxagent_run) -> None:
    rewind = ctxagent_run(repo, "rewind", "--help")
    assert rewind.returncode == 0 and "--cwd CWD" in rewind.stdout and "REWIND_CWD" not in rewind.stdout
    replay = ctxagent_run(repo, "replay", "--help")
    assert "--window WINDOW" in replay.stdout and "REPLAY_" not in replay.stdout
    inspect = ctxagent_run(repo, "inspect", "--help")
    assert "--last" in inspect.stdout and "[session]" in inspect.stdout


def test_models_refresh_for_one_provider_asks_that_provider_alone(repo: Path, scripted_server, ctxagent_run) -> None:
    srv = scripted_server({"turns": [], "models": [  # type: ignore[arg-type]  # the script's object form
        {"id": "claude-brand-new", "display_name": "Claude Brand New", "max_input_tokens": 2_000_000, "max_tokens": 128_000},
    ]})
    env = {"ANTHROPIC_API_KEY": "sk-ant-test-0000000000000000", "ANTHROPIC_BASE_URL": srv.url,
           "OPENAI_API_KEY": "sk-test-openai-000000000000000000", "OPENAI_BASE_URL": srv.url}
    one = ctxagent_run(repo, "models", "--refresh", "--provider", "anthropic", env=env)
    assert one.returncode == 0, one.stderr
    assert "anthropic: 1 model listed by the provider" in one.stderr
    assert "openai" not in one.stderr  # neither asked nor said
    both = ctxagent_run(repo, "models", "--refresh", env=env)
    assert "anthropic:" in both.stderr and "openai" in both.stderr  # without --provider: every provider with a key
