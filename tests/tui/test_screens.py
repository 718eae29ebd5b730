"""/context, /memory, /rewind picker, setup screen and probe, chat widgets — with real data."""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

import pytest
from ctxagent.agent.session_ops import log_turns, rewind
from ctxagent.context.events import (
    AssistantData,
    CompactionData,
    ContextReportData,
    SessionStartData,
    ToolResultData,
    UserData,
)
from ctxagent.context.history import SessionLog
from ctxagent.tui.app.screens.memory_screen import MemoryScreen
from ctxagent.tui.app.screens.rewind_screen import RewindChoice, RewindScreen
from ctxagent.tui.app.screens.setup_screen import (
    SetupChoice,
    SetupScreen,
    probe_local_server,
    setup_instructions,
)
from ctxagent.tui.app.widgets.chat import ToolPanel, argument_summary, preview
from ctxagent.tui.app.widgets.chat_log import ChatLog
from ctxagent.tui.app.widgets.reply import AssistantMessage
from textual.widgets import Input
from tui_helpers import HostApp, ScreenHost, answer, make_report, screen_text

pytestmark = pytest.mark.anyio


def _log(tmp_path: Path) -> SessionLog:
    log = SessionLog.create(tmp_path / "sessions", "s1")
    log.append(SessionStartData(session="s1", model="scripted:x", cwd=str(tmp_path)))
    log.append(UserData(text="fix the add function\nplease", turn=1))
    log.append(AssistantData(text="reading", tool_calls=[{"id": "c1", "name": "read_file", "arguments": {"path": "calc.py"}}],
               usage={"input_tokens": 100, "output_tokens": 10}, step=1))
    log.append(ToolResultData(call_id="c1", name="read_file", content="def add(a, b):\n    return a - b\n",
               is_error=False, duration_ms=3, meta={}))
    log.append(AssistantData(text="editing", tool_calls=[{"id": "c2", "name": "edit_file", "arguments": {"path": "calc.py"}}],
               usage={"input_tokens": 150, "output_tokens": 12}, step=2))
    log.append(ToolResultData(call_id="c2", name="edit_file", content="edited", is_error=False, duration_ms=4,
               meta={"files": ["calc.py"], "diff": "--- a/calc.py\n+++ b/calc.py\n-    return a - b\n+    return a + b\n"}))
    log.append(ContextReportData(step=2, report=make_report(50, step=2, spilled=1).to_dict(), warm="<context-memory>\n[constraint t1] 不要修改配置文件\n</context-memory>"))
    log.append(ToolResultData(call_id="c3", name="grep", content="x" * 50, is_error=False, duration_ms=1, meta={},
               spill={"handle": "spill-abc", "lines": 5000}))
    log.append(UserData(text="now run the tests", turn=2))
    log.append(CompactionData(first_id=1, last_id=6, summary="Decisions: none\nChanges: calc.py", method="extractive"))
    return log


async def test_memory_screen_search_and_forget_with_the_real_store(tmp_path: Path) -> None:
    from ctxagent.context.memory import MemoryStore

    store = MemoryStore.open(tmp_path / "memory.db")
    keep = store.add("We decided to use PostgreSQL, not MySQL", "decision", turn=2)
    gone = store.add("不要修改配置文件", "constraint", turn=1)
    app = ScreenHost(lambda: MemoryScreen(store))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "PostgreSQL" in text and "不要修改配置文件" in text
        table = app.screen.query_one("DataTable")
        row = [i for i in range(table.row_count) if table.get_row_at(i)[0] == str(gone)][0]
        table.move_cursor(row=row)
        await pilot.press(*"add", "d", "d")  # typing is text: it goes to the search, it forgets nothing
        await pilot.pause()
        assert store.get(gone) is not None and app.screen.query_one("#memory-query", Input).value == "adddd"
        await pilot.press(*["backspace"] * 5, "enter")
        await pilot.pause()
        table.move_cursor(row=[i for i in range(table.row_count) if table.get_row_at(i)[0] == str(gone)][0])
        await pilot.press("delete")
        await pilot.pause()
        assert "press Delete again" in screen_text(app)
        await pilot.press("delete")
        await pilot.pause()
        assert store.get(gone) is None and store.get(keep) is not None
        assert "不要修改配置文件" not in screen_text(app)
        await pilot.press("slash")
        await pilot.press(*"postgres", "enter")
        await pilot.pause()
        assert "matching “postgres”" in screen_text(app)
        assert table.row_count == 1
    store.close()


async def test_memory_screen_without_store() -> None:
    app = ScreenHost(lambda: MemoryScreen(None))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "No memory store" in screen_text(app)


async def test_rewind_picker_lists_turns_and_returns_choice(tmp_path: Path) -> None:
    log = _log(tmp_path)
    turns = log_turns(log)
    assert [t.turn for t in turns] == [1, 2] and turns[0].files_changed == ["calc.py"]
    assert turns[0].first_line == "fix the add function"
    app = ScreenHost(lambda: RewindScreen(turns))
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "fix the add function" in text and "now run the tests" in text and "calc.py" in text
        await answer(pilot, "up", "2")  # the cursor starts on the newest turn; 2: the conversation
        await pilot.pause()
    assert app.results == [RewindChoice(1, "conversation")]


async def test_rewind_picker_without_code_checkpoints_refuses_code_modes(tmp_path: Path) -> None:
    turns = log_turns(_log(tmp_path))
    app = ScreenHost(lambda: RewindScreen(turns, has_code=False))
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause()
        await answer(pilot, "1")  # both: there is no code to restore
        await pilot.pause()
        assert app.results == []
        await pilot.press("3")
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [None]


def test_conversation_rewind_is_non_destructive(tmp_path: Path) -> None:
    log = _log(tmp_path)
    n = len(log.events)
    rewind(log, 2, "conversation")
    assert len(log.events) == n + 1 and log.events[-1].kind == "rewind"
    assert [t.turn for t in log_turns(log)] == [1]
    reloaded = SessionLog.load(log.path)
    assert [e.kind for e in reloaded.events] == [e.kind for e in log.events]


class _Models(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/v1/models":
            body = json.dumps({"data": [{"id": "qwen2.5-coder:7b"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_error(404)

    def log_message(self, *args: object) -> None:
        return


def test_probe_finds_a_loopback_server_and_reports_none_when_closed() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    port = server.server_address[1]
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        found = probe_local_server(port=port)
        assert found is not None
        assert found.base_url == f"http://127.0.0.1:{port}/v1" and found.models == ["qwen2.5-coder:7b"]
    finally:
        server.shutdown()
        server.server_close()
    assert probe_local_server(port=port) is None
    with pytest.raises(ValueError):
        probe_local_server(host="10.0.0.1")


def test_setup_instructions_name_every_variable() -> None:
    text = setup_instructions("no model configured")
    for needle in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CTXAGENT_MODEL", "--base-url", "11434", "ctxagent demo"):
        assert needle in text


async def test_setup_screen_offers_the_local_server() -> None:
    from ctxagent.tui.app.screens.setup_screen import LocalServer

    local = LocalServer("http://127.0.0.1:11434/v1", ["llama3"])
    app = ScreenHost(lambda: SetupScreen("no model configured", local))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "ANTHROPIC_API_KEY" in text and "Found a local" in text
        await pilot.press("u")
        await pilot.pause()
    assert app.results == [SetupChoice("local", "openai:llama3", "http://127.0.0.1:11434/v1")]


async def test_setup_screen_without_a_local_server_offers_the_demo_and_one_quit_key() -> None:
    app = ScreenHost(lambda: SetupScreen("no model configured", None))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "Use local server" not in text and "[U]se" not in text  # nothing answered: no key for it
        assert "[D]emo" in text and "[Q]uit" in text and text.count("Quit") == 1  # the button, one key in the footer
        assert "(optional)" not in text
        await pilot.press("u")  # does nothing without a server
        await pilot.pause()
        assert app.results == []
        await pilot.press("d")
        await pilot.pause()
    assert app.results == [SetupChoice("demo")]


def test_argument_summary_and_preview() -> None:
    assert argument_summary("read_file", {"path": "src/登录.py", "start": 3}) == "src/登录.py"
    assert argument_summary("shell", {"command": "pytest -q"}) == "pytest -q"
    assert argument_summary("x", {}) == ""
    assert preview("\n".join(str(i) for i in range(30)), lines=5).endswith("… 25 more lines")


async def test_tool_panel_states_and_diff() -> None:
    chat = ChatLog()
    async with HostApp(chat).run_test(size=(80, 24)) as pilot:
        panel = ToolPanel("c1", "edit_file", {"path": "calc.py"})
        await chat.mount(panel)
        assert "running" in panel.title and "calc.py" in panel.title
        panel.finish("ok", False, 12, {"diff": "--- a/calc.py\n+++ b/calc.py\n-a - b\n+a + b\n", "files": ["calc.py"]})
        panel.collapsed = False
        await pilot.pause()
        assert "✓ edit_file" in panel.title and "12 ms" in panel.title
        assert "+a + b" in screen_text(pilot.app)
        bad = ToolPanel("c2", "shell", {"command": "false"})
        await chat.mount(bad)
        bad.finish("exit 1", True, 5)
        assert bad.has_class("-error") and "error" in bad.title
        assert chat.panel("c2") is bad


async def test_assistant_message_streams_markdown() -> None:
    chat = ChatLog()
    async with HostApp(chat).run_test(size=(80, 24)) as pilot:
        msg = AssistantMessage()
        await chat.mount(msg)
        for piece in ("Hello **wor", "ld** — 你好", "\n\n- item"):
            await msg.write(piece)
        await msg.finish()
        await pilot.pause()
        text = screen_text(pilot.app)
        assert "Hello world — 你好" in text and "item" in text
        assert msg.text == "Hello **world** — 你好\n\n- item"
