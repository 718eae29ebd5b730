"""Credentials bound to origins (issue 30, Critical 1), through the real CLI, the real SDKs and the
loopback scripted server: a session on `openai:` at the user's `--base-url` with `ANTHROPIC_API_KEY`
also set never sends the Anthropic key to that URL — not when the model asks a sub-agent for
`anthropic:`, not for a sub-agent or summary model on Anthropic from the config, not at `ctxagent
compact`. The server keeps a fingerprint of every request's credential (scripted/server.py
`key_print`); a second server stands for Anthropic's own URL, named by ANTHROPIC_BASE_URL."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ctxagent.tui.lab.scripted.server import key_print

SESSION = "openai:gpt-5.4-mini"
ANTHROPIC_KEY = "sk-ant-test-key-0000000000000000"  # what run_ctxagent sets (tests/e2e/conftest.py)
OPENAI_KEY = "sk-test-openai-000000000000000000"
TASK = "find the subtraction bug"
SUMMARY = ("Decisions:\n- [turn 1] SQLite was chosen\nConstraints:\n- none\nChanges:\n- none\n"
           "Open tasks:\n- [turn 1] the pricing bug\n")


def _user_config(text: str) -> None:
    home = Path(os.environ["CTXAGENT_HOME"]) / "config"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text, encoding="utf-8")


def _keys(srv) -> set[str]:  # noqa: ANN001
    return {r.get("key", "") for r in srv.requests()}


def _task_script(args: dict) -> dict:
    call = {"name": "task", "arguments": {"description": TASK, "prompt": "Which line of calc.py is wrong?", **args}}
    child = [{"text": "calc.py line 2 returns a - b."}]
    return {"turns": [{"text": "Delegating.", "tool_calls": [call]}, {"text": "done"}], "agents": {TASK: child}}


def _events(repo: Path, session: str) -> list[dict]:
    path = repo / ".ctxagent" / "sessions" / f"{session}.jsonl"
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def test_the_model_naming_another_provider_never_moves_its_key(repo: Path, scripted_server, ctxagent_run) -> None:  # noqa: ANN001
    srv = scripted_server(_task_script({"model": "anthropic:claude-sonnet-5-5"}))
    out = ctxagent_run(repo, "-p", "fix calc", "--model", SESSION, "--base-url", srv.url, "--output", "json")
    assert out.returncode == 0, out.stderr
    assert key_print(ANTHROPIC_KEY) not in _keys(srv)  # the Anthropic key never reached the session's URL
    assert not any(r["path"].endswith("/messages") for r in srv.requests())  # nor did the Anthropic wire
    [result] = [e["data"] for e in _events(repo, json.loads(out.stdout)["session"])
                if e["kind"] == "tool_result" and e["data"]["name"] == "task"]
    assert result["is_error"] and "not the call's to choose" in result["content"]
    assert SESSION in result["content"]  # the model is told which model its sub-agents run on
    assert not (repo / ".ctxagent" / "sessions" / "subagents").exists() or not any(
        (repo / ".ctxagent" / "sessions" / "subagents").iterdir())


def test_the_task_tool_offers_no_model_to_choose(repo: Path, scripted_server, ctxagent_run) -> None:  # noqa: ANN001
    srv = scripted_server([{"text": "hi"}])
    out = ctxagent_run(repo, "-p", "hi", "--model", SESSION, "--base-url", srv.url)
    assert out.returncode == 0, out.stderr
    [task] = [t["function"] for t in srv.requests()[0]["body"]["tools"] if t["function"]["name"] == "task"]
    assert "model" not in task["parameters"]["properties"]


def test_a_configured_subagent_model_on_another_provider_goes_to_that_providers_url(
        repo: Path, scripted_server, ctxagent_run) -> None:  # noqa: ANN001
    """The user's own `subagent_model` on Anthropic: its requests carry the Anthropic key to the URL
    the user gave Anthropic (ANTHROPIC_BASE_URL), never to the session's --base-url."""
    srv = scripted_server(_task_script({}))
    anthropic_own = scripted_server({"turns": [], "agents": {TASK: [{"text": "calc.py line 2 returns a - b."}]}})
    _user_config('subagent_model = "anthropic:claude-haiku-5-5"\n')
    out = ctxagent_run(repo, "-p", "fix calc", "--model", SESSION, "--base-url", srv.url, "--output", "json",
                       env={"ANTHROPIC_BASE_URL": anthropic_own.url})
    assert out.returncode == 0, out.stderr
    assert _keys(srv) == {key_print(OPENAI_KEY)}  # the session's URL saw only the OpenAI key
    child = anthropic_own.requests()
    assert child and {r["key"] for r in child} == {key_print(ANTHROPIC_KEY)}
    assert all(r["path"].endswith("/v1/messages") for r in child)
    [result] = [e["data"] for e in _events(repo, json.loads(out.stdout)["session"])
                if e["kind"] == "tool_result" and e["data"]["name"] == "task"]
    assert "calc.py line 2 returns a - b" in result["content"]
    assert result["meta"]["subagent"]["model"] == "anthropic:claude-haiku-5-5"


def test_compact_sends_an_anthropic_summary_to_anthropics_url_only(repo: Path, scripted_server, ctxagent_run) -> None:  # noqa: ANN001
    srv = scripted_server([{"text": f"answer {i}. We decided to use SQLite."} for i in range(3)])
    session = None
    for prompt in ("The pricing bug: 3 seats are billed as 30.", "rename the helpers", "and the docs"):
        out = ctxagent_run(repo, "-p", prompt, "--model", SESSION, "--base-url", srv.url, "--output", "json",
                           *(["--resume", session] if session else []))
        assert out.returncode == 0, out.stderr
        session = json.loads(out.stdout)["session"]
    assert session
    anthropic_own = scripted_server([{"text": SUMMARY}])
    _user_config('summary_model = "anthropic:claude-haiku-5-5"\n')
    before = len(srv.requests())
    out = ctxagent_run(repo, "compact", session, "--base-url", srv.url, env={"ANTHROPIC_BASE_URL": anthropic_own.url})
    assert out.returncode == 0, out.stderr
    assert len(srv.requests()) == before and _keys(srv) == {key_print(OPENAI_KEY)}
    assert [r["key"] for r in anthropic_own.requests()] == [key_print(ANTHROPIC_KEY)]
    compaction = [e for e in _events(repo, session) if e["kind"] == "compaction"][-1]["data"]
    assert compaction["method"] == "model" and "SQLite was chosen" in compaction["summary"], (compaction, out.stderr)
