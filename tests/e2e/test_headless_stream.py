"""Headless parity (issue 24): `--output stream-json` through the real console script, both real SDKs
and the real scripted server; piped standard input as the prompt or appended to it; `-p ""` refused
before anything is sent; the step limit said in text mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BIN = Path(sys.executable).with_name("ctxagent")
MODELS = ["anthropic:claude-sonnet-5-5", "openai:gpt-5.4-mini"]
ENV_KEY = "sk-ant-test-key-0000000000000000"  # tests/e2e/conftest.py's run_ctxagent sets it
SHAPED = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token: redacted by its shape
FILE_KEY = "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"
SECRETS = (ENV_KEY, SHAPED, FILE_KEY)

STREAM_SCRIPT: list[dict[str, Any]] = [
    {"text": "Reading the settings first.", "tool_calls": [{"name": "read_file", "arguments": {"path": "settings.env"}}]},
    {"text": f"The key in use is {ENV_KEY}, the token {SHAPED}; 配置文件读完了, nothing else to change."},
]


def run(repo: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANTHROPIC_API_KEY": ENV_KEY, "OPENAI_API_KEY": "sk-test-openai-000000000000000000"}
    return subprocess.run([str(BIN), *args], cwd=repo, capture_output=True, text=True, env=env, timeout=120,
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)


@pytest.mark.parametrize("model", MODELS)
def test_stream_json_lines_through_both_sdks(repo: Path, scripted_server, model: str) -> None:
    (repo / "settings.env").write_text(f"OPENAI_API_KEY={FILE_KEY}\nREGION=eu\n")
    srv = scripted_server(STREAM_SCRIPT)
    out = run(repo, "-p", "check the settings", "--model", model, "--base-url", srv.url, "--output", "stream-json")
    assert out.returncode == 0, out.stderr
    for secret in SECRETS:
        assert secret not in out.stdout and secret not in out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]  # every line is one JSON object
    types = [line["type"] for line in lines]
    assert types[0] == "session_started" and types[-1] == "result"
    assert lines[0]["model"] == model and "read_file" in lines[0]["tools"]
    assert types.count("context_report") == 2 and types.count("assistant_message") == 2
    assert types.index("turn_started") < types.index("step_started") < types.index("context_report") < types.index("text_delta")

    call = next(line for line in lines if line["type"] == "tool_call")
    result = next(line for line in lines if line["type"] == "tool_result")
    assert call["name"] == "read_file" and call["arguments"] == {"path": "settings.env"}
    assert result["id"] == call["id"] and not result["is_error"]
    assert "REGION=eu" in result["content"] and "[redacted]" in result["content"]
    assert types.index("tool_call") < types.index("tool_result")

    # the reply streamed in more than one delta, and the deltas add up to the (redacted) message
    final = [line for line in lines if line["type"] == "assistant_message"][-1]
    deltas = [line["text"] for line in lines if line["type"] == "text_delta" and line["step"] == final["step"]]
    assert len(deltas) > 1 and "".join(deltas) == final["text"]
    assert "配置文件读完了" in final["text"] and final["text"].count("[redacted]") == 2

    reports = [line["report"] for line in lines if line["type"] == "context_report"]
    assert [r["step"] for r in reports] == [1, 2] and reports[-1]["window"] > 0
    end = lines[-1]
    assert end["exit_code"] == 0 and end["stop_reason"] == "end_turn" and end["steps"] == 2 and end["tool_calls"] == 1
    assert end["result"] == final["text"] and end["context"]["step"] == 2


def test_stream_json_refusal_and_its_exit_code(repo: Path, scripted_server) -> None:
    srv = scripted_server([
        {"tool_calls": [{"name": "shell", "arguments": {"command": "rm -rf build"}}]},
        {"text": "I could not run it."},
    ])
    out = run(repo, "-p", "clean up", "--model", MODELS[1], "--base-url", srv.url, "--output", "stream-json")
    assert out.returncode == 6, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    refused = [line for line in lines if line["type"] == "refused"]
    assert refused == [{"type": "refused", "tool": "shell", "permission": "command", "target": "rm -rf build"}]
    assert lines[-1]["type"] == "result" and lines[-1]["exit_code"] == 6 and lines[-1]["refused"]


@pytest.mark.parametrize("model", MODELS)
def test_piped_stdin_is_appended_to_the_prompt(repo: Path, scripted_server, model: str) -> None:
    srv = scripted_server([{"text": "Looks fine."}])
    diff = "--- a/calc.py\n+++ b/calc.py\n-    return a - b\n+    return a + b\n"
    out = run(repo, "-p", "review this diff", "--model", model, "--base-url", srv.url, stdin=diff)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Looks fine.\n"
    sent = json.dumps(srv.requests()[0]["body"], ensure_ascii=False)
    assert json.dumps("review this diff\n\n" + diff.rstrip())[1:-1] in sent


def test_piped_stdin_alone_is_the_prompt(repo: Path, scripted_server) -> None:
    srv = scripted_server([{"text": "你好"}])
    out = run(repo, "-p", "--model", MODELS[0], "--base-url", srv.url, "--output", "json", stdin="解释 calc.py\n")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"] == "你好"
    user = srv.requests()[0]["body"]["messages"][-1]
    assert "解释 calc.py" in json.dumps(user, ensure_ascii=False)


@pytest.mark.parametrize("args", [("-p", ""), ("-p",), ("-p", "   ")])
def test_an_empty_prompt_is_a_usage_error_and_nothing_is_sent(repo: Path, scripted_server, args: tuple[str, ...]) -> None:
    srv = scripted_server([{"text": "never"}])
    out = run(repo, *args, "--model", MODELS[0], "--base-url", srv.url)
    assert out.returncode == 2
    assert "no prompt" in out.stderr and out.stdout == ""
    assert srv.requests() == []
    assert not (repo / ".ctxagent" / "sessions").exists() or not list((repo / ".ctxagent" / "sessions").glob("*.jsonl"))


def test_the_step_limit_is_said_in_text_mode(repo: Path, scripted_server) -> None:
    srv = scripted_server([{"text": "Looking.", "tool_calls": [{"name": "list_files", "arguments": {}}]},
                           {"text": "never reached"}])
    out = run(repo, "-p", "look around", "--model", MODELS[0], "--base-url", srv.url, "--max-steps", "1")
    assert out.returncode == 5
    assert "stopped at the step limit (1 step)" in out.stderr and "--max-steps" in out.stderr
    assert len(srv.requests()) == 1
