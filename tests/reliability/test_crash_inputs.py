"""Input nested to death (issue 30): a JSON-RPC line 200,000 levels deep to a real `ctxagent acp`, and a
200 kB nested `.mcp.json` or `config.toml` to `ctxagent config`, `doctor` and `-p`, in a repository
nobody trusted and in the user's own config. Each gets a clear error naming what was wrong (and the
file); nothing dies with a traceback, and the ACP server goes on serving.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from attack_helpers import BIN, MODEL, no_traceback, run_cli, user_config

DEEP = 200_000  # levels


def _json_arrays(n: int) -> str:
    return "[" * n + "]" * n


def _json_objects(n: int) -> str:
    return '{"a":' * n + "1" + "}" * n


def _toml_arrays(n: int) -> str:
    return "model = " + "[" * n + "]" * n + "\n"


def _toml_tables(n: int) -> str:
    return "model = " + "{a = " * n + "1" + "}" * n + "\n"


# --- ACP ------------------------------------------------------------------------------------------------

def _acp(repo: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([str(BIN), "--model", MODEL, "--base-url", "http://127.0.0.1:9", "acp"], cwd=repo,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.timeout(120)
def test_a_json_rpc_line_200000_levels_deep_gets_a_parse_error_and_acp_keeps_serving(repo: Path) -> None:
    proc = _acp(repo)
    assert proc.stdin is not None and proc.stdout is not None
    deep_params = '{"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": ' + _json_objects(DEEP) + "}"
    sent = [
        _json_arrays(DEEP),
        _json_objects(DEEP),
        deep_params,
        '{"jsonrpc": "2.0", "id": 8, "method": "initialize", "params": ' + _json_arrays(300) + "}",  # past the bound, not json's
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
    ]
    for line in sent:
        proc.stdin.write(line + "\n")
    proc.stdin.flush()
    replies = [json.loads(proc.stdout.readline()) for _ in sent]
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    stderr = proc.stderr.read() if proc.stderr else ""
    assert "Traceback" not in stderr and "RecursionError" not in stderr, stderr[-2000:]
    errors = [r for r in replies if r.get("id") is None]
    assert [r["error"]["code"] for r in errors] == [-32700] * 4
    assert all("nests more than 128 levels" in r["error"]["message"] for r in errors)
    (answer,) = [r for r in replies if r.get("id") == 1]
    assert answer["result"]["agentCapabilities"]["loadSession"] is True  # still serving


# --- config files through the real CLI -----------------------------------------------------------------

CASES = {
    ".mcp.json arrays": (".mcp.json", '{"mcpServers": ' + _json_arrays(DEEP // 2) + "}"),
    ".mcp.json objects": (".mcp.json", '{"mcpServers": ' + _json_objects(DEEP // 8) + "}"),
    "config.toml arrays": (".ctxagent/config.toml", _toml_arrays(DEEP // 2)),
    "config.toml inline tables": (".ctxagent/config.toml", _toml_tables(DEEP // 8)),
}
COMMANDS = {
    "config": ["config"],
    "doctor": ["doctor"],
    "-p": ["-p", "hello", "--model", MODEL, "--base-url", "http://127.0.0.1:9"],
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", CASES)
def test_a_200kb_nested_repository_file_is_a_clear_error(repo: Path, case: str, command: str) -> None:
    """An untrusted repository (never trusted here): the file is read, refused with its name, no traceback."""
    name, text = CASES[case]
    (repo / name).parent.mkdir(exist_ok=True)
    (repo / name).write_text(text, encoding="utf-8")
    assert len(text) >= 100_000
    out = run_cli(repo, *COMMANDS[command], timeout=120)
    no_traceback(out)
    said = out.stdout + out.stderr
    assert "nests more than 64 levels" in said and str(repo / name) in said, said[-2000:]
    if command != "doctor":
        assert out.returncode != 0


@pytest.mark.parametrize("command", COMMANDS)
def test_a_nested_user_config_is_a_clear_error(repo: Path, _isolated_home: Path, command: str) -> None:
    user_config(_isolated_home, _toml_arrays(DEEP // 2))
    out = run_cli(repo, *COMMANDS[command], timeout=120)
    no_traceback(out)
    said = out.stdout + out.stderr
    assert "nests more than 64 levels" in said and "config.toml" in said, said[-2000:]


# --- other input from outside: a provider's error body, another agent's transcripts ----------------------

def test_a_provider_error_body_200000_levels_deep_is_classified_not_raised() -> None:
    from ctxagent.agent.providers.wire_errors import classify_exception

    class StatusError(Exception):
        status_code = 400
        response = None
        body = _json_objects(DEEP)
        message = "bad request"

    error = classify_exception(StatusError(), provider="openai", model="m", key_env="OPENAI_API_KEY",
                               status_error=StatusError, connection_error=ConnectionError, transport_error=OSError)
    assert error is not None and "rejected the request (400)" in str(error) and "bad request" in str(error)
    assert len(str(error)) < 1_000


def test_a_claude_code_transcript_line_200000_levels_deep_is_skipped(tmp_path: Path) -> None:
    """`ctxagent replay` reads the user's Claude Code transcripts: a line nested to death is one bad line."""
    from ctxagent.tui.lab.bench.readers.claude import parse_claude_code, read_transcript
    from ctxagent.tui.lab.replay.projects import sessions_in

    good = json.dumps({"type": "user", "sessionId": "s1", "cwd": "/w", "uuid": "u1",
                       "message": {"role": "user", "content": "hello 你好"}})
    deep = '{"type": "user", "message": ' + _json_objects(DEEP) + "}"
    folder = tmp_path / "-w"
    folder.mkdir()
    (folder / "s1.jsonl").write_text(f"{deep}\n{good}\n{deep}", encoding="utf-8")  # a deep, torn last line too
    lines, torn = read_transcript(folder / "s1.jsonl")
    assert torn and len(lines) == 2
    traj = parse_claude_code(lines)
    assert traj.skipped["claude-code:bad_json_line"] == 1
    assert [e.kind for e in traj.events] == ["user"]
    sessions_in(folder)  # reads the first records of each file: no RecursionError


def test_a_command_file_nested_to_death_is_skipped_with_its_name(repo: Path, _isolated_home: Path) -> None:
    """A repository's `.ctxagent/commands/*.toml` (Gemini CLI's form) 20,000 levels deep (40 kB, under the
    64 KB a command may have): skipped and said, the other commands still load ("never raises", as
    load_commands promises)."""
    from ctxagent.agent.custom_commands import load_commands

    folder = repo / ".ctxagent" / "commands"
    folder.mkdir(parents=True)
    (folder / "deep.toml").write_text('prompt = "x"\nextra = ' + "[" * 20_000 + "]" * 20_000 + "\n")
    (folder / "fine.toml").write_text('prompt = "review the diff 审查"\n')
    loaded = load_commands(repo)
    assert [c.name for c in loaded.commands] == ["fine"]
    assert any("deep.toml" in p and "nests more than 64 levels" in p for p in loaded.problems), loaded.problems


def test_memory_synonyms_from_a_config_nested_to_death_are_none(tmp_path: Path) -> None:
    """The memory store reads `synonyms` from the config.toml beside it (the MCP server and `ctxagent memory`
    open it without the agent's config): a file nested to death gives no synonyms, not a crash."""
    from ctxagent.context.language.terms import config_synonyms
    from ctxagent.context.memory import MemoryStore

    (tmp_path / "config.toml").write_text(_toml_arrays(DEEP // 2), encoding="utf-8")
    assert config_synonyms(tmp_path / "config.toml") == []
    with MemoryStore.open(tmp_path / "memory.db") as store:
        store.add("the parser fails on nested tuples 解析器", "note")
        assert store.search("parser")
