"""What a misbehaving client gets from `ctxagent acp`: clear errors, a cancelled turn, an intact log."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, text_block

from .conftest import BIN, MODEL, RecordingClient, acp_agent, agent_env, run, session_events

SHELL_THEN_TEXT = [
    {"text": "Running it.", "tool_calls": [{"name": "shell", "arguments": {"command": "echo hello > out.txt"}}]},
    {"text": "Done."},
]


def _answered(events: list[dict[str, Any]]) -> None:
    """Every tool call in the log has its result: the log is consistent for the next request."""
    calls = [c["id"] for e in events if e["kind"] == "assistant" for c in e["data"].get("tool_calls", [])]
    results = [e["data"]["call_id"] for e in events if e["kind"] == "tool_result"]
    assert sorted(calls) == sorted(results)


def _prompt_session(client: RecordingClient, repo: Path, url: str, *texts: str, extra: tuple[str, ...] = ()) -> tuple[str, list[Any]]:
    async def main() -> tuple[str, list[Any]]:
        async with acp_agent(client, repo, url, *extra) as (conn, _proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            sid = (await conn.new_session(cwd=str(repo), mcp_servers=[])).session_id
            answers = [await conn.prompt(session_id=sid, prompt=[text_block(t)]) for t in texts]
            return sid, answers

    return run(main())


def test_cancel_while_asking_permission_ends_the_turn_cancelled(repo: Path, scripted_server) -> None:
    srv = scripted_server([*SHELL_THEN_TEXT[:1], {"text": "Back again."}])
    client = RecordingClient(answers=["cancel"])
    sid, (first, second) = _prompt_session(client, repo, srv.url, "write out.txt", "are you there?")
    assert first.stop_reason == "cancelled"
    assert second.stop_reason == "end_turn" and "Back again." in client.text()
    assert not (repo / "out.txt").exists()
    events = session_events(repo, sid)
    _answered(events)
    shell = next(e for e in events if e["kind"] == "tool_result" and e["data"]["name"] == "shell")
    assert shell["data"]["is_error"] and "cancel" in shell["data"]["content"]
    assert len(srv.requests()) == 2  # the cancelled turn made no further model call


def test_a_permission_never_answered_is_a_refusal_after_the_timeout(repo: Path, scripted_server) -> None:
    srv = scripted_server(SHELL_THEN_TEXT)
    client = RecordingClient(answers=["never"])
    sid, (answer,) = _prompt_session(client, repo, srv.url, "write out.txt", extra=("--permission-timeout", "0.5"))
    assert answer.stop_reason == "end_turn" and "Done." in client.text()
    assert not (repo / "out.txt").exists()
    events = session_events(repo, sid)
    _answered(events)
    shell = next(e for e in events if e["kind"] == "tool_result" and e["data"]["name"] == "shell")
    assert "no answer within 0.5 s" in shell["data"]["content"]
    assert any(e["kind"] == "permission" and e["data"]["decision"] == "deny" for e in events)


@pytest.mark.parametrize("how", ["disconnect", "sigterm"])
def test_a_client_that_disconnects_mid_turn_leaves_a_whole_log_and_a_clean_exit(repo: Path, scripted_server, how: str) -> None:
    srv = scripted_server(SHELL_THEN_TEXT)
    client = RecordingClient(answers=["never"])
    client.asked = None

    async def main() -> tuple[str, int | None, Any]:
        client.asked = asyncio.Event()
        async with acp_agent(client, repo, srv.url) as (conn, proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            sid = (await conn.new_session(cwd=str(repo), mcp_servers=[])).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("write out.txt")]))
            await client.asked.wait()
            if how == "disconnect":
                proc.stdin.close()  # the editor is gone, mid-turn, with the question open
            else:
                proc.send_signal(signal.SIGTERM)  # the editor stops its agent, mid-turn
            code = await asyncio.wait_for(proc.wait(), 30)
            try:
                outcome: Any = (await asyncio.wait_for(turn, 10)).stop_reason
            except Exception as exc:  # noqa: BLE001 - the answer may not get out any more
                outcome = exc
            return sid, code, outcome

    sid, code, outcome = run(main())
    # the turn was cancelled and finished before the process left: its answer still went out on stdout
    assert code == 0 and (outcome == "cancelled" or isinstance(outcome, ConnectionError)), outcome
    events = session_events(repo, sid)
    _answered(events)
    shell = next(e for e in events if e["kind"] == "tool_result" and e["data"]["name"] == "shell")
    assert shell["data"]["is_error"] and ("disconnected" in shell["data"]["content"] or "cancel" in shell["data"]["content"])
    assert len(srv.requests()) == 1 and not (repo / "out.txt").exists()


def _lines(proc: subprocess.Popen[str], n: int) -> list[dict[str, Any]]:
    assert proc.stdout is not None
    return [json.loads(proc.stdout.readline()) for _ in range(n)]


@pytest.mark.timeout(120)
def test_garbage_gets_json_rpc_errors_and_the_server_keeps_serving(repo: Path, tmp_path: Path) -> None:
    proc = subprocess.Popen([str(BIN), "--model", MODEL, "--base-url", "http://127.0.0.1:9", "acp"], cwd=repo,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=agent_env())
    assert proc.stdin is not None
    sent = [
        "this is not json",
        "[1, 2]",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": PROTOCOL_VERSION}}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "no/such"}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                    "params": {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "session/new", "params": {"cwd": "relative/dir", "mcpServers": []}}),
        json.dumps({"jsonrpc": "2.0", "id": 5, "method": "session/load",
                    "params": {"cwd": str(repo), "sessionId": "../../etc/passwd", "mcpServers": []}}),
        json.dumps({"jsonrpc": "2.0", "id": 6, "method": "session/prompt", "params": {"sessionId": 7}}),
    ]
    for line in sent:
        proc.stdin.write(line + "\n")
    proc.stdin.flush()
    replies = _lines(proc, len(sent))
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    by_id = {r["id"]: r for r in replies}
    assert [r["error"]["code"] for r in replies if r["id"] is None] == [-32700, -32600]
    assert by_id[1]["result"]["agentCapabilities"]["loadSession"] is True
    assert by_id[2]["error"]["code"] == -32601
    assert by_id[3]["error"]["code"] == -32602 and "unknown session" in json.dumps(by_id[3]["error"])
    assert by_id[4]["error"]["code"] == -32602 and "absolute path" in json.dumps(by_id[4]["error"])
    assert by_id[5]["error"]["code"] == -32602 and "not a ctxagent session id" in json.dumps(by_id[5]["error"])
    assert by_id[6]["error"]["code"] == -32602
    assert not (repo / ".ctxagent" / "sessions").exists() or not list((repo / ".ctxagent" / "sessions").glob("*.jsonl"))
