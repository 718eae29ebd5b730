"""The command line as a newcomer meets it: typos, a wrong --cwd, help for everything, empty states,
and failed starts that leave nothing behind."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from ctxagent.agent.config import Config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session
from ctxagent.context.errors import ConfigError
from ctxagent.context.floor.display import plural
from ctxagent.tui.cli.commands import SUBCOMMANDS
from ctxagent.tui.cli.main import build_parser, main

NO_KEYS = {"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""}

# Flags without help in modules other helpers own (memory: cli_memory.py; bench: tui/lab/bench/*).
OTHERS_UNDOCUMENTED = {
    ("memory", "search"), ("memory", "list"), ("memory", "add"), ("memory", "forget"),
    ("bench", "memory-latency"), ("bench", "load"),
}


def test_unknown_flag_is_named_with_a_suggestion(repo: Path, ctxagent_run) -> None:
    out = ctxagent_run(repo, "--modle", "foo")
    assert out.returncode == 2
    assert "unknown option --modle (did you mean --model?)" in out.stderr
    assert "invalid choice" not in out.stderr
    # a value that looks like a flag or a command is still the option's value
    assert main(["-p", "report", "--cwd", str(repo / "nope")]) == 2


def test_a_missing_cwd_is_an_error_not_a_new_directory(repo: Path, ctxagent_run, tmp_path: Path) -> None:
    missing = tmp_path / "does" / "not" / "exist"
    for args in (["--cwd", str(missing), "-p", "hi"], ["report", "--cwd", str(missing)], ["sessions", "--cwd", str(missing)]):
        out = ctxagent_run(repo, *args)
        assert out.returncode == 2, args
        assert f"--cwd {missing}: does not exist" in out.stderr
    assert not missing.exists() and not missing.parent.exists()
    a_file = repo / "calc.py"
    assert "is not a directory" in ctxagent_run(repo, "--cwd", str(a_file), "-p", "hi").stderr


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[str]:
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                if not child.description:
                    missing.append(f"{' '.join(path + (name,))}: no description")
                missing += _walk(child, path + (name,))
        elif not isinstance(action, argparse._HelpAction) and not action.help and path[-2:] not in OTHERS_UNDOCUMENTED:
            missing.append(f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}: no help")
    return missing


def test_every_command_and_flag_has_help() -> None:
    assert _walk(build_parser()) == []
    for name in SUBCOMMANDS:  # each command's full parser is built when that command runs
        assert _walk(build_parser([name])) == [], name


def test_scripted_server_and_bench_help(repo: Path, ctxagent_run) -> None:
    server = ctxagent_run(repo, "scripted-server", "--help").stdout
    for word in ('"tool_calls"', '"fault": "429"', '"context_length"', '"models"', "retires_at", "GET  /v1/models"):
        assert word in server, word
    bench = ctxagent_run(repo, "bench", "--help").stdout
    for name in ("replay", "tokens", "perf", "all", "locomo", "memory-latency", "load"):
        assert f"    {name}" in bench, name
    top = ctxagent_run(repo, "--help").stdout
    assert "models" in top and "6 an edit or command was" in top and "anthropic:claude-sonnet-5-5" in top


def test_sessions_when_there_are_none_and_plurals(repo: Path, ctxagent_run) -> None:
    out = ctxagent_run(repo, "sessions")
    assert out.returncode == 0 and out.stdout.startswith("no sessions yet in ")
    assert [plural(n, "step") for n in (0, 1, 2)] == ["0 steps", "1 step", "2 steps"]


def test_report_says_step_explains_loss_and_shows_compactions(repo: Path, scripted_server, ctxagent_run) -> None:
    srv = scripted_server([{"text": "We decided to use SQLite."}, {"text": "Noted."}])
    base = ["--model", "openai:gpt-5.4-mini", "--base-url", srv.url, "--output", "json"]
    first = ctxagent_run(repo, "-p", "use SQLite", *base)
    assert first.returncode == 0, first.stderr
    session = json.loads(first.stdout)["session"]
    one = ctxagent_run(repo, "report", session).stdout
    assert "— 1 step in 1 turn" in one and "round" not in one
    assert "loss: the share of the conversation's tokens the model did not see word for word" in one
    assert ctxagent_run(repo, "-p", "and?", "--continue", *base).returncode == 0
    comp = ctxagent_run(repo, "compact", session, env={"CTXAGENT_MODEL": "openai:gpt-5.4-mini", "OPENAI_BASE_URL": srv.url})
    assert comp.returncode == 0, comp.stderr
    two = ctxagent_run(repo, "report", session).stdout
    assert "— 2 steps in 2 turns" in two
    assert "after the last step: compacted events" in two  # a /compact between steps is shown too
    listing = ctxagent_run(repo, "sessions").stdout
    assert f"{session}    2 turns    2 steps  use SQLite" in listing


def test_a_failed_start_leaves_no_session(repo: Path, ctxagent_run, tmp_path: Path) -> None:
    (repo / ".ctxagent").mkdir(exist_ok=True)
    (repo / ".ctxagent" / "config.toml").write_text('strategy = "nonsense"\n')
    out = ctxagent_run(repo, "-p", "hi", "--model", "openai:gpt-5.4-mini", "--base-url", "http://127.0.0.1:9")
    assert out.returncode == 2 and "strategy" in out.stderr
    (repo / ".ctxagent" / "config.toml").unlink()
    out = ctxagent_run(repo, "-p", "hi", env=NO_KEYS)  # no model: the set-up message
    assert out.returncode == 2
    out = ctxagent_run(repo, "-p", "hi", "--model", "openai:o4-mini", "--base-url", "http://127.0.0.1:9")  # retired
    assert out.returncode == 2 and "was retired" in out.stderr
    assert not list((repo / ".ctxagent" / "sessions").glob("*.jsonl"))


def test_a_session_reaches_the_disk_with_its_first_message(repo: Path) -> None:
    """What the app does: open a session, try to build the agent (the set-up screen when that fails),
    quit — no file; or send a message — the file holds everything, created private (0600)."""
    session = open_session(repo, Config(model=None))
    with pytest.raises(ConfigError, match="no model configured"):
        create_agent(session)
    session.log.close()
    assert not session.log.path.exists()

    session = open_session(repo, Config(model="scripted:" + str(_script(repo, [{"text": "hello"}]))))
    agent = create_agent(session)
    assert not session.log.path.exists() and [e.kind for e in session.log.events] == ["session_start", "system_prompt"]
    agent.run_turn("hi")
    session.log.close()
    kinds = [json.loads(line)["kind"] for line in session.log.path.read_text().splitlines()]
    assert kinds[:3] == ["session_start", "system_prompt", "user"] and "assistant" in kinds
    assert session.log.path.stat().st_mode & 0o777 == 0o600


def _script(repo: Path, turns: list[dict[str, object]]) -> Path:
    path = repo.parent / "inline-script.json"
    path.write_text(json.dumps(turns))
    return path
