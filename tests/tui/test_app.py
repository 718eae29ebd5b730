"""Whole-app tests: the real Agent, tools, session log and memory, with the in-process scripted model."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from ctxagent.agent.factory import create_agent
from ctxagent.agent.updates import ContextBuilt
from ctxagent.context import usage_text
from ctxagent.tui.app.app import CtxApp
from ctxagent.tui.app.messages import AgentUpdate
from ctxagent.tui.app.screens.modals import BreakpointModal, PermissionModal
from ctxagent.tui.app.widgets.chat import NoticeLine, SummaryPanel, ToolPanel, UserMessage
from ctxagent.tui.app.widgets.reply import AssistantMessage
from tui_helpers import SlowProvider, answer, make_report, make_session, ready, screen_text, send, wait_until

pytestmark = pytest.mark.anyio

BIG_LINES = 140  # with window 6000 and no spill (and today's tool list, task included): the third step lands past 75 %


def _big(root: Path) -> None:
    (root / "big.txt").write_text("\n".join(f"line {i}: some log text here with words" for i in range(BIG_LINES)))


FIX_SCRIPT: list[dict[str, Any]] = [
    {"text": "Reading calc.py.", "tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
    {"text": "Fixing the operator.", "tool_calls": [
        {"name": "edit_file", "arguments": {"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}}]},
    {"text": "Done: **fixed** `add`."},
]


async def test_multi_step_turn_updates_gauge_every_step_and_renders_tools(tmp_path: Path) -> None:
    session = make_session(tmp_path, FIX_SCRIPT)
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "fix add")
        reports = screen.agent.reports
        assert len(reports) == 3  # one build per step, inside the tool loop
        assert screen.gauge.history == [r.usage_pct for r in reports]
        assert screen.gauge.report is reports[-1]
        panels = list(screen.query(ToolPanel))
        assert [p.tool_name for p in panels] == ["read_file", "edit_file"]
        assert all(p.status == "ok" for p in panels)
        assert "a + b" in str(panels[1].meta.get("diff", ""))
        assert [m.text for m in screen.query(AssistantMessage)][-1] == "Done: **fixed** `add`."
        assert (session.root / "calc.py").read_text().count("a + b") == 1
        assert f" {usage_text(reports[-1].usage_pct)}" in screen_text(app)  # never rounded up (context/monitor.py)
        assert screen.status.info.tokens_in > 0 and screen.status.info.activity == "idle"


async def test_crossing_75_percent_shows_the_prompt_and_compact_lowers_usage(tmp_path: Path) -> None:
    script = [
        {"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
        {"text": "Reading the big file.", "tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]},
        {"text": "Read it all."},
        {"text": "Second answer."},
    ]
    session = make_session(tmp_path, script, window=6500, spill_tokens=100_000)  # room for the budget tools' schemas
    _big(session.root)
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "read everything")
        assert screen.gauge.report is not None and screen.gauge.report.usage_pct >= 75
        assert screen.bar.shown and "compact older turns" in screen_text(app)
        assert screen.gauge.level == screen.level == "compress"
        await send(pilot, app, "and now?")
        # the bar's keys are not the input's: Ctrl+K still deletes to the end of the line
        screen.input.value = "keep this, drop that"
        screen.input.move_cursor((0, 10))
        await pilot.press("ctrl+k")
        assert screen.input.value == "keep this," and screen.bar.shown and not session.log.of_kind("compaction")
        screen.input.value = ""
        before = screen.gauge.report.usage_pct
        await pilot.press("ctrl+o")  # the bar's "Compact now"
        await wait_until(pilot, lambda: not screen.busy and bool(session.log.of_kind("compaction")))
        await pilot.pause()
        assert screen.gauge.report.usage_pct < before
        assert not screen.bar.shown
        summary = screen.query(SummaryPanel).last()
        assert "compacted turn 1" in str(summary.title) and "replaced by this" in str(summary.title)
        assert not summary.collapsed and summary.summary == session.log.of_kind("compaction")[-1].data["summary"]


async def test_slash_compact_with_focus(tmp_path: Path) -> None:
    script = [*FIX_SCRIPT, {"text": "Second answer."}]
    session = make_session(tmp_path, script)
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "fix add")
        await send(pilot, app, "thanks")
        await send(pilot, app, "/compact keep the calc.py notes")
        await wait_until(pilot, lambda: bool(session.log.of_kind("compaction")))
        comp = session.log.of_kind("compaction")[-1]
        assert comp.data.get("focus") == "keep the calc.py notes"
        assert len(session.log.of_kind("user")) == 2  # originals stay in the log
        # what it made and what it dropped, on screen
        await wait_until(pilot, lambda: bool(screen.query(SummaryPanel)))
        panel = screen.query(SummaryPanel).last()
        assert "calc.py" in panel.summary and "Changes" in panel.summary
        assert "turn 1" in str(panel.title) and "messages replaced" in str(panel.title)


async def test_full_window_modal_and_its_compact_choice(tmp_path: Path) -> None:
    script = [*FIX_SCRIPT, {"text": "Second answer."}]
    session = make_session(tmp_path, script)
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "fix add")
        await send(pilot, app, "thanks")
        screen.post_message(AgentUpdate(ContextBuilt(99, make_report(93, step=99))))
        await wait_until(pilot, lambda: isinstance(app.screen, BreakpointModal))
        assert "93% full" in screen_text(app)
        await answer(pilot, "2")  # compact
        await wait_until(pilot, lambda: bool(session.log.of_kind("compaction")) and not screen.busy)
        assert not isinstance(app.screen, BreakpointModal)


async def test_full_window_new_session_with_summary(tmp_path: Path) -> None:
    session = make_session(tmp_path, [*FIX_SCRIPT, {"text": "ok"}])
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "fix add. Never touch setup.cfg.")
        old_id = session.id
        screen.post_message(AgentUpdate(ContextBuilt(9, make_report(95, step=9))))
        await wait_until(pilot, lambda: isinstance(app.screen, BreakpointModal))
        await answer(pilot, "1")  # a new session with a summary
        await wait_until(pilot, lambda: screen.session.id != old_id and not screen.busy)
        new_log = screen.session.log
        assert new_log.events[0].data.get("parent") == old_id
        comp = new_log.of_kind("compaction")
        assert comp and "calc.py" in comp[0].data["summary"]
        assert any("Never touch setup.cfg" in e.data.get("text", "") for e in new_log.of_kind("memory"))
        assert not list(screen.query(UserMessage))  # a fresh chat, opening with the carried summary
        assert screen.query(SummaryPanel) and screen.gauge.report is None
        assert screen.status.info.session == new_log.session_id


async def test_esc_interrupts_mid_stream_and_leaves_a_consistent_log(tmp_path: Path) -> None:
    script = [{"text": "word " * 4000}, {"text": "after the interrupt"}]  # ~17 s of stream: Esc lands mid-stream even on a loaded machine
    session = make_session(tmp_path, script)

    def slow_agent(sess: Any, **kw: Any) -> Any:
        agent = create_agent(sess, **kw)
        agent.parts.provider = SlowProvider(agent.parts.provider, 0.01)
        return agent

    app = CtxApp(session, slow_agent)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await ready(pilot, app)
        screen.input.value = "write a lot"
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(list(screen.query(AssistantMessage))) and len(screen.query_one(AssistantMessage).text) > 20)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not screen.busy)
        await pilot.pause()
        kinds = [e.kind for e in session.log.events]
        assert kinds.count("user") == 1 and kinds[-1] == "assistant"
        last = session.log.events[-1].data
        assert last["stop_reason"] == "cancelled" and last["partial"] is True
        assert 0 < len(last["text"]) < len("word " * 4000)
        assert any("turn 1 interrupted after 1 step; the log is consistent" in n.message for n in screen.query(NoticeLine))
        await send(pilot, app, "go on")  # the session continues normally after an interrupt
        assert screen.query(AssistantMessage).last().text == "after the interrupt"


async def test_permission_modal_allow_once_then_deny_with_reason(tmp_path: Path) -> None:
    script = [
        {"text": "Editing.", "tool_calls": [{"name": "edit_file", "arguments": {"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}}]},
        {"text": "Edited."},
        {"text": "Editing again.", "tool_calls": [{"name": "edit_file", "arguments": {"path": "calc.py", "old_text": "a + b", "new_text": "b + a"}}]},
        {"text": "Understood."},
    ]
    session = make_session(tmp_path, script, permission_mode="ask")
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await ready(pilot, app)
        screen.input.value = "fix it"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal))
        assert "a + b" in screen_text(app)  # the diff is shown before deciding
        await answer(pilot, "1")  # allow once
        await wait_until(pilot, lambda: not screen.busy)
        assert "a + b" in (session.root / "calc.py").read_text()
        screen.input.value = "swap them"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal))
        await pilot.click("#perm-reason")
        await pilot.press(*"keep a + b", "enter")
        await wait_until(pilot, lambda: not screen.busy)
        assert "a + b" in (session.root / "calc.py").read_text()
        denied = [e for e in session.log.of_kind("tool_result") if e.data["is_error"]]
        assert denied and "keep a + b" in denied[-1].data["content"]
        assert [e.data["decision"] for e in session.log.of_kind("permission")] == ["allow", "deny"]


async def _rewind_both(tmp_path: Path, script: list[dict[str, Any]]) -> None:
    session = make_session(tmp_path, script)
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "fix add")
        assert "a + b" in (session.root / "calc.py").read_text()
        before = screen.gauge.report.usage_pct
        await send(pilot, app, "/rewind")
        from ctxagent.tui.app.screens.rewind_screen import RewindScreen

        await wait_until(pilot, lambda: isinstance(app.screen, RewindScreen))
        assert "fix add" in screen_text(app) and "calc.py" in screen_text(app)
        await answer(pilot, "1")  # both: code and conversation
        await wait_until(pilot, lambda: not screen.busy and not isinstance(app.screen, RewindScreen))
        await pilot.pause()
        assert "a - b" in (session.root / "calc.py").read_text()
        assert session.log.of_kind("rewind")
        assert not list(screen.query(UserMessage))  # the turn is hidden from the view…
        assert screen.input.value == "fix add"  # …and its text is back in the input
        assert len(session.log.of_kind("user")) == 1  # …but still in the log
        notice = screen.query(NoticeLine).last().message
        assert "rewound to before turn 1" in notice and "restored: calc.py" in notice and "no longer recalled" in notice
        # the gauge shows what the next step will send, not the last report from before the rewind
        await wait_until(pilot, lambda: screen.gauge.report is not None and screen.gauge.report.usage_pct < before)


async def test_rewind_restores_the_file_and_the_conversation(tmp_path: Path) -> None:
    await _rewind_both(tmp_path, FIX_SCRIPT[1:])  # edit first


async def test_rewind_after_read_then_edit(tmp_path: Path) -> None:
    """A read before the edit must not count as a change (the checkpoint is taken before the edit)."""
    await _rewind_both(tmp_path, FIX_SCRIPT)


async def test_remember_clear_help_cost_context_memory(tmp_path: Path) -> None:
    session = make_session(tmp_path, FIX_SCRIPT)
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "fix add")
        await send(pilot, app, "/remember 不要修改配置文件")
        mem = session.log.of_kind("memory")
        assert mem and mem[-1].data["text"] == "不要修改配置文件"
        store = screen.agent.memory
        assert any("不要修改配置文件" in r.content and r.pinned for r in store.list(type="constraint"))
        await send(pilot, app, "/context")
        assert "What is in it" in screen_text(app) and "reserve" in screen_text(app)
        await pilot.press("escape")
        await send(pilot, app, "/memory")
        assert "不要修改配置文件" in screen_text(app)
        await pilot.press("escape")
        await send(pilot, app, "/cost")
        assert "Cost of this session" in screen_text(app)
        await pilot.press("escape")
        await send(pilot, app, "/help")
        assert "/rewind" in screen_text(app)
        await pilot.press("escape")
        n = len(session.log.events)
        await send(pilot, app, "/clear")
        assert not list(screen.query(UserMessage)) and len(session.log.events) == n
        await send(pilot, app, "/nonsense")
        await send(pilot, app, "/model")
        assert screen.status.info.model.startswith("scripted:")


async def test_resume_renders_history(tmp_path: Path) -> None:
    session = make_session(tmp_path, FIX_SCRIPT)
    agent = create_agent(session)
    agent.run_turn("fix add", threading.Event())
    session.log.close()
    from ctxagent.agent.session import open_session

    again = open_session(session.root, session.config, resume=session.id)
    app = CtxApp(again, create_agent)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await ready(pilot, app)
        assert [m.text for m in screen.query(UserMessage)] == ["fix add"]
        assert [p.status for p in screen.query(ToolPanel)] == ["ok", "ok"]
        assert screen.gauge.report is not None and len(screen.gauge.history) == 3


async def test_setup_screen_when_no_model(tmp_path: Path) -> None:
    from ctxagent.agent.config import load_config
    from ctxagent.agent.session import open_session
    from ctxagent.tui.app.screens.setup_screen import SetupScreen

    session = make_session(tmp_path, FIX_SCRIPT)
    bare = open_session(session.root, load_config(session.root, {}))
    app = CtxApp(bare, create_agent, probe=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, SetupScreen))
        await pilot.pause()
        assert "CTXAGENT_MODEL" in screen_text(app)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_value == 2


async def test_model_switch_by_name_keeps_the_session(tmp_path: Path) -> None:
    import json

    session = make_session(tmp_path, [{"text": "from the first model"}])
    second = tmp_path / "second.json"
    second.write_text(json.dumps([{"text": "from the second model"}]), encoding="utf-8")
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await ready(pilot, app)
        await send(pilot, app, "hello")
        await send(pilot, app, f"/model scripted:{second}")
        assert screen.agent.model_label == f"scripted:{second}" == screen.status.info.model
        await send(pilot, app, "and now?")
        assert screen.session is session  # same session, same log
        texts = [e.data["text"] for e in session.log.of_kind("assistant")]
        assert texts == ["from the first model", "from the second model"]
        await send(pilot, app, "/model nosuchprovider:x")
        assert screen.agent.model_label == f"scripted:{second}"  # a bad name leaves the model as it was
        assert session.config.model == f"scripted:{second}"
        assert "cannot switch to nosuchprovider:x" in screen.query(NoticeLine).last().message
