"""The hub against real servers: the fixture server over stdio (in the sandbox and out of it) and over
Streamable HTTP, and the faults — never answering `initialize`, exiting mid-call, garbage on the
wire, a 50 MB answer, a cancelled call."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from ctxagent.agent.mcp.client import McpHub, ServerState
from ctxagent.agent.mcp.config import McpServerConfig
from ctxagent.agent.mcp.transport import MAX_MESSAGE_BYTES
from ctxagent.tools.sandbox import SandboxPolicy

from .conftest import stdio_server


def _text(hub: McpHub, server: str, tool: str, args: dict) -> str:
    outcome = hub.call(server, tool, args)
    assert outcome.result is not None, outcome.error
    return "".join(getattr(b, "text", "") for b in outcome.result.content)


def test_start_is_background_and_parallel(hub_of) -> None:
    changes: list[ServerState] = []
    hub = hub_of({"a": stdio_server(sandbox=False), "b": stdio_server(sandbox=False)}, on_change=changes.append)
    assert {s.state for s in hub.states()} == {"starting"}  # start() returned before any server answered
    assert hub.wait_started()
    assert [s.state for s in hub.states()] == ["ready", "ready"]
    assert {c.name for c in changes if c.state == "ready"} == {"a", "b"}
    names = {t.name for t in hub.states()[0].tools}
    assert {"reverse", "add", "blob", "picture", "fail", "die", "sleep"} <= names


def test_stdio_server_in_the_sandbox(hub_of, tmp_path: Path) -> None:
    hub = hub_of({"fx": stdio_server()}, SandboxPolicy())
    hub.wait_started()
    state = hub.states()[0]
    assert state.state == "ready", state.error
    assert _text(hub, "fx", "reverse", {"text": "沙箱 ok"}) == "ko 箱沙"


def test_http_server_with_bearer_token(hub_of, http_server, monkeypatch) -> None:
    url = http_server()
    monkeypatch.setenv("FIXTURE_TOKEN", "tok-not-logged-0000")
    hub = hub_of({"web": McpServerConfig(url=url, bearer_token_env_var="FIXTURE_TOKEN", headers={"X-Team": "core"})})
    hub.wait_started()
    assert hub.states()[0].state == "ready", hub.states()[0].error
    assert _text(hub, "web", "reverse", {"text": "abc"}) == "cba"
    assert "tok-not-logged" not in repr(hub.states())


def test_missing_token_variable_fails_clearly(hub_of, http_server, monkeypatch) -> None:
    monkeypatch.delenv("NO_SUCH_TOKEN", raising=False)
    hub = hub_of({"web": McpServerConfig(url=http_server(), bearer_token_env_var="NO_SUCH_TOKEN")})
    hub.wait_started()
    state = hub.states()[0]
    assert state.state == "failed" and "NO_SUCH_TOKEN is not set" in state.error
    assert "NO_SUCH_TOKEN" in hub.call("web", "reverse", {"text": "x"}).error


def test_enabled_and_disabled_tools(hub_of) -> None:
    hub = hub_of({"a": stdio_server(sandbox=False, enabled_tools=["reverse", "add", "die"], disabled_tools=["die"])})
    hub.wait_started()
    assert sorted(t.name for t in hub.states()[0].tools) == ["add", "reverse"]


def test_server_that_never_answers_initialize(hub_of) -> None:
    hub = hub_of({"silent": stdio_server("silent", sandbox=False, startup_timeout=1.5)})
    assert hub.wait_started()
    state = hub.states()[0]
    assert state.state == "failed"
    assert "no answer to initialize within 1.5s" in state.error
    assert "failed" in hub.call("silent", "anything", {}).error


def test_server_that_exits_mid_call(hub_of) -> None:
    hub = hub_of({"fx": stdio_server(sandbox=False)})
    hub.wait_started()
    outcome = hub.call("fx", "die", {})
    assert outcome.result is None and outcome.error
    deadline = time.monotonic() + 10
    while hub.states()[0].state != "crashed" and time.monotonic() < deadline:
        time.sleep(0.05)
    state = hub.states()[0]
    assert state.state == "crashed" and "exited (code 3)" in state.error
    assert "crashed" in hub.call("fx", "reverse", {"text": "x"}).error


def test_server_that_answers_garbage(hub_of) -> None:
    hub = hub_of({"bad": stdio_server("garbage", sandbox=False)})
    hub.wait_started()
    assert hub.states()[0].state == "ready"
    outcome = hub.call("bad", "broken", {})
    assert outcome.result is None and "unreadable" in outcome.error and "not JSON-RPC" in outcome.error


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_50_mb_answer_is_refused_not_read(hub_of, http_server, transport: str) -> None:
    cfg = stdio_server(sandbox=False) if transport == "stdio" else McpServerConfig(url=http_server())
    hub = hub_of({"fx": cfg})
    hub.wait_started()
    outcome = hub.call("fx", "blob", {"size": 50_000_000})
    assert outcome.result is None
    assert str(MAX_MESSAGE_BYTES) in outcome.error or "32 MB" in outcome.error
    assert _text(hub, "fx", "reverse", {"text": "still here"}) == "ereh llits"  # the session survives


def test_cancel_sends_the_cancel_notification(hub_of, tmp_path: Path) -> None:
    hub = hub_of({"fx": stdio_server(sandbox=False)})
    hub.wait_started()
    marker = tmp_path / "cancelled.txt"
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    started = time.monotonic()
    outcome = hub.call("fx", "sleep", {"seconds": 60, "marker": str(marker)}, cancel)
    assert time.monotonic() - started < 10
    assert outcome.result is None and "cancelled" in outcome.error
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.read_text() == "cancelled"  # the server's handler was cancelled: it got notifications/cancelled
    assert _text(hub, "fx", "reverse", {"text": "ok"}) == "ko"


def test_a_chunked_answer_without_content_length_is_capped(hub_of, http_server, tmp_path: Path) -> None:
    import resource

    url = http_server(mode="chunked")  # a hand-written endpoint: its tools/call body is chunked and never ends
    sent = tmp_path / "port0.sent"
    hub = hub_of({"c": McpServerConfig(url=url, tool_timeout=120)})
    hub.wait_started()
    assert hub.states()[0].state == "ready", hub.states()[0].error
    assert _text(hub, "c", "small", {}) == "x" * 2 * 65536  # a chunked answer that ends is read whole
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    outcome = hub.call("c", "endless", {})
    assert outcome.result is None and "larger than 32 MB" in outcome.error and "not read" in outcome.error
    deadline = time.monotonic() + 30
    while not sent.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    # the client hung up at the cap: the server got out 32 MB and what the sockets' buffers held, not 1 GB
    assert MAX_MESSAGE_BYTES < int(sent.read_text()) < MAX_MESSAGE_BYTES + 32 * 1024 * 1024
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - peak < 256 * 1024 * 1024
    # a gzip body (asked for identity) could inflate past any cap of its bytes: refused unread
    zipped = hub.call("c", "zipped", {})
    assert zipped.result is None and "compressed its answer (gzip)" in zipped.error
    assert hub.states()[0].state == "ready"  # the session goes on
    assert _text(hub, "c", "small", {}) == "x" * 2 * 65536


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_tools_list_changed_lists_the_tools_again(hub_of, http_server, transport: str) -> None:
    changes: list[ServerState] = []
    cfg = stdio_server(sandbox=False, evolve=True) if transport == "stdio" else McpServerConfig(
        url=http_server(evolve=True))
    hub = hub_of({"fx": cfg}, on_change=changes.append)
    hub.wait_started()
    assert "evolve" in {t.name for t in hub.states()[0].tools}
    said = _text(hub, "fx", "evolve", {"add": ["lookup_zip", "查询"], "remove": ["blob"]})
    assert "added" in said
    names = {t.name for t in hub.states()[0].tools}  # the call returned after the new list was in
    assert {"lookup_zip", "查询"} <= names and "blob" not in names
    assert [c.state for c in changes] == ["ready", "ready"] and hub.states()[0].error == ""
    assert _text(hub, "fx", "lookup_zip", {"query": "10115"}) == "lookup_zip answers 10115"
