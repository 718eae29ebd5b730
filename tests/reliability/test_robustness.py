"""Issue 19 "Robustness", through the real CLI, both real SDKs and the loopback scripted server:
lone surrogates from the model, a stalled stream, an `error` event mid-stream, tool JSON nested
200,000 deep, and two processes on one session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from attack_helpers import no_traceback, run_cli
from ctxagent.tui.lab.scripted.server import ScriptedServer

MODELS = {"anthropic": "anthropic:claude-haiku-4-5", "openai": "openai:gpt-5.4-mini"}
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-test-key-000000000000000000", "OPENAI_API_KEY": "sk-test-key-0000000000000000000000"}
both = pytest.mark.parametrize("kind", sorted(MODELS))


def cli(repo: Path, kind: str, srv: ScriptedServer, prompt: str, *extra: str,
        env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_cli(repo, "-p", prompt, "--model", MODELS[kind], "--base-url", srv.base_url, *extra,
                   env={**KEYS, **(env or {})}, timeout=timeout)


def sent_texts(body: dict[str, Any]) -> str:
    """Every message of a request body as one string (both wire formats)."""
    return json.dumps(body.get("messages"), ensure_ascii=True)


# -- lone surrogates -------------------------------------------------------------------------------

BROKEN = "the file caf\udce9.txt is broken \ud800 here 坏了"


@both
def test_a_lone_surrogate_from_the_model_neither_crashes_nor_poisons_the_session(repo: Path, kind: str,
                                                                               servers: Callable[..., ScriptedServer]) -> None:
    srv = servers([{"text": BROKEN}, {"text": "second answer 第二"}])
    first = cli(repo, kind, srv, "go", "--output", "json")
    no_traceback(first)
    assert first.returncode == 0, first.stderr
    result = json.loads(first.stdout)  # valid JSON, the surrogates escaped
    # escaped as the log holds it, or as JSON's own lossless \udce9 escape (the display edge's json_text)
    assert ("caf\\xe9.txt" in result["result"] or "caf\udce9.txt" in result["result"]) and "坏了" in result["result"]
    second = cli(repo, kind, srv, "again", "--continue")
    no_traceback(second)
    assert second.returncode == 0, second.stderr
    assert "second answer 第二" in second.stdout
    assert len(srv.requests) == 2  # the next request was sent: the log holds no surrogate
    assert "caf\\\\xe9.txt" in sent_texts(srv.requests[1]["body"])  # the model sees what was logged


# -- a stalled stream ------------------------------------------------------------------------------

@both
@pytest.mark.parametrize("fault", ["stall", "pings", "drip"])
def test_a_stalled_stream_times_out_with_a_notice_and_is_retried(repo: Path, kind: str, fault: str,
                                                               servers: Callable[..., ScriptedServer]) -> None:
    """Nothing but keep-alives (or nothing, or one byte at a time) for 30 s: the idle timeout (3 s
    here) ends the stream, stderr said it was waiting, and the retry gets the answer."""
    srv = servers([{"fault": fault, "seconds": 30}, {"text": "answer after the stall 恢复"}])
    out = cli(repo, kind, srv, "go", env={"CTXAGENT_STREAM_IDLE_TIMEOUT": "6"}, timeout=60)
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    assert "answer after the stall 恢复" in out.stdout
    assert "waiting for the model (5 s)" in out.stderr
    assert "the stream stalled (nothing for 6 s); retrying" in out.stderr
    assert len(srv.requests) == 2  # the first was given up before the server's 30 s ended it


@both
def test_a_stall_after_text_keeps_the_text_as_partial(repo: Path, kind: str, servers: Callable[..., ScriptedServer]) -> None:
    srv = servers([{"fault": "stall", "text": "the first half 前一半", "seconds": 30}])
    out = cli(repo, kind, srv, "go", "--output", "json", env={"CTXAGENT_STREAM_IDLE_TIMEOUT": "2"}, timeout=60)
    no_traceback(out)
    assert out.returncode == 1
    result = json.loads(out.stdout)
    assert result["error"]["type"] == "StreamIdleError"
    assert "the first half 前一半" in result["result"]
    assistant = _last_assistant(repo)
    assert assistant["partial"] is True and "the first half 前一半" in assistant["text"]


# -- an error event mid-stream ---------------------------------------------------------------------

@both
def test_an_error_event_mid_stream_keeps_the_text_that_arrived(repo: Path, kind: str,
                                                             servers: Callable[..., ScriptedServer]) -> None:
    srv = servers([{"fault": "error_event", "text": "what arrived before the error 错误之前"}])
    out = cli(repo, kind, srv, "go", "--output", "json")
    no_traceback(out)
    assert out.returncode == 1
    result = json.loads(out.stdout)
    assert "what arrived before the error 错误之前" in result["result"]
    assert "mid-stream" in result["error"]["message"]
    assistant = _last_assistant(repo)
    assert assistant["partial"] is True and assistant["text"] == "what arrived before the error 错误之前"
    errors = [e for e in _events(repo) if e["kind"] == "error"]
    assert errors and "kept the" in errors[-1]["data"]["message"]


def _events(repo: Path) -> list[dict[str, Any]]:
    logs = sorted((repo / ".ctxagent" / "sessions").glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    return [json.loads(line) for line in logs[-1].read_text(encoding="utf-8").splitlines() if line.strip()]


def _last_assistant(repo: Path) -> dict[str, Any]:
    return [e for e in _events(repo) if e["kind"] == "assistant"][-1]["data"]


# -- tool JSON nested 200,000 deep -----------------------------------------------------------------

DEEP = "[" * 200_000 + "]" * 200_000


@both
def test_tool_arguments_nested_200000_deep_are_a_tool_error(repo: Path, kind: str,
                                                          servers: Callable[..., ScriptedServer]) -> None:
    srv = servers([
        {"tool_calls": [{"name": "read_file", "raw_arguments": '{"path": ' + DEEP + "}"}]},
        {"tool_calls": [{"name": "read_file", "raw_arguments": '{"path": "app.py", "x": ' + "[" * 300 + "]" * 300 + "}"}]},
        {"text": "done 完成"},
    ])
    out = cli(repo, kind, srv, "go", "--output", "json")
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"] == "done 完成"
    results = [e["data"] for e in _events(repo) if e["kind"] == "tool_result"]
    assert len(results) == 2 and all(r["is_error"] for r in results)
    assert all("nests more than" in r["content"] for r in results)


# -- two processes on one session ------------------------------------------------------------------

_HOLDER = """
import sys, time
from pathlib import Path
from ctxagent.agent.config import load_config
from ctxagent.agent.session import open_session
root = Path(sys.argv[1])
session = open_session(root, load_config(root), "")  # --continue, and nothing written yet: an idle TUI
print("opened", session.id, flush=True)
time.sleep(60)
"""


def test_a_session_open_in_one_process_is_refused_to_another_naming_it(repo: Path,
                                                                      servers: Callable[..., ScriptedServer]) -> None:
    srv = servers([{"text": "first 第一"}, {"text": "never sent"}])
    assert cli(repo, "openai", srv, "go").returncode == 0
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(repo)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, **KEYS, "CTXAGENT_MODEL": MODELS["openai"]})
    try:
        line = holder.stdout.readline() if holder.stdout else ""
        assert line.startswith("opened"), line
        second = cli(repo, "openai", srv, "more", "--continue")
        no_traceback(second)
        assert second.returncode == 2
        assert "in use by another ctxagent process" in second.stderr and f"pid {holder.pid}" in second.stderr
        assert len(srv.requests) == 1  # nothing was sent, nothing written
        ids = [e["id"] for e in _events(repo)]
        assert ids == list(range(len(ids)))
    finally:
        holder.kill()
        holder.wait()
    third = cli(repo, "openai", srv, "more", "--continue")  # the holder is gone: the lock with it
    assert third.returncode == 0, third.stderr
    ids = [e["id"] for e in _events(repo)]
    assert ids == list(range(len(ids)))


def test_a_log_loaded_before_another_process_wrote_reloads_before_its_first_write(tmp_path: Path) -> None:
    """The reload: a log read (no lock) while another process appends takes those events first."""
    from ctxagent.context.events import UserData
    from ctxagent.context.history import SessionLog

    writer = SessionLog.create(tmp_path, "s")
    writer.append(UserData(text="one", turn=1))
    reader = SessionLog.load(tmp_path / "s.jsonl")
    writer.append(UserData(text="two", turn=2))
    writer.close()
    ev = reader.append(UserData(text="three", turn=3))
    reader.close()
    assert ev.id == 2
    lines = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [x["id"] for x in lines] == [0, 1, 2] and [x["data"]["text"] for x in lines] == ["one", "two", "three"]



# -- the stream watch, provider by provider --------------------------------------------------------

def _provider(kind: str, url: str, idle: float) -> Any:
    from ctxagent.agent.providers.anthropic import AnthropicProvider
    from ctxagent.agent.providers.openai import OpenAIProvider

    if kind == "anthropic":
        return AnthropicProvider("claude-haiku-4-5", api_key="sk-ant-test", base_url=url, idle_timeout=idle)
    return OpenAIProvider("gpt-5.4-mini", api_key="sk-test", base_url=url, idle_timeout=idle)


REQUEST_TEXT = "fix it 修一下"


def _request() -> Any:
    from ctxagent.context.request import Message, Request

    return Request(system="You are a test.", messages=[Message("user", REQUEST_TEXT)], tools=[])


@both
def test_a_stream_that_resumes_before_the_timeout_says_so_and_is_whole(kind: str, monkeypatch: pytest.MonkeyPatch,
                                                                      servers: Callable[..., ScriptedServer]) -> None:
    from ctxagent.agent.providers import stream_watch
    from ctxagent.agent.providers.protocol import Stop, TextDelta, Waiting

    monkeypatch.setattr(stream_watch, "WAITING_EVERY", 0.4)
    srv = servers([{"fault": "pings", "text": "slow but whole 慢", "seconds": 1.5}])
    events = list(_provider(kind, srv.base_url, idle=20).stream(_request()))
    waits = [e.seconds for e in events if isinstance(e, Waiting)]
    assert waits and waits[0] == 0.4 and waits[-1] == 0  # counted up while silent, then "sends again"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "slow but whole 慢"
    assert events[-1] == Stop("end_turn")


@both
def test_a_cancel_is_seen_while_the_stream_is_silent(kind: str, servers: Callable[..., ScriptedServer]) -> None:
    import threading

    from ctxagent.agent.providers.protocol import Stop

    srv = servers([{"fault": "stall", "text": "before", "seconds": 30}])
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    events = list(_provider(kind, srv.base_url, idle=60).stream(_request(), cancel))
    assert events[-1] == Stop("cancelled")  # not after the server's 30 s


def test_the_status_line_says_how_long_the_model_is_silent() -> None:
    from ctxagent.tui.app.widgets.status import StatusLine, format_status

    line = StatusLine()
    line.show_waiting(3, 15.0)
    assert "waiting for the model (15 s)" in format_status(line.info).plain
    line.show_waiting(3, 0)
    assert "step 3" in format_status(line.info).plain


@both
def test_a_request_holding_a_lone_surrogate_is_sent_escaped(kind: str, servers: Callable[..., ScriptedServer]) -> None:
    """The last edge: whatever put a surrogate in a request (a system prompt, a recalled memory),
    the SDK never meets it."""
    from ctxagent.agent.providers.protocol import TextDelta
    from ctxagent.context.request import Message, Request

    srv = servers([{"text": "sent 已发送"}])
    request = Request(system="rules from caf\udce9.md", messages=[Message("user", "read caf\udce9.txt")], tools=[])
    events = list(_provider(kind, srv.base_url, idle=20).stream(request))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "sent 已发送"
    assert "caf\\\\xe9.txt" in sent_texts(srv.requests[0]["body"])
