"""SVG snapshots of the views whose look matters: the main chat screen, gauge levels, permission,
breakpoint, /context, /rewind, setup. Regenerate with
`pytest tests/tui/test_snapshots.py --snapshot-update -n 0` after a deliberate change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ctxagent.agent.checkpoints.turns import FileStat, TurnInfo
from ctxagent.agent.updates import PermissionRequest
from ctxagent.context.budget import Budget
from ctxagent.context.builder.dispatch import build
from ctxagent.context.builder.inputs import BuildInputs
from ctxagent.context.events import (
    AssistantData,
    ContextReportData,
    SessionStartData,
    ToolResultData,
    UserData,
)
from ctxagent.context.history import Event
from ctxagent.context.request import ToolSpec
from ctxagent.context.tokens import CachedCounter, get_counter
from ctxagent.tui.app.screens.context_screen import ContextScreen, ContextSnapshot
from ctxagent.tui.app.screens.modals import BreakpointModal, PermissionModal
from ctxagent.tui.app.screens.rewind_screen import RewindScreen
from ctxagent.tui.app.screens.setup_screen import SetupScreen
from ctxagent.tui.app.widgets.gauge import UsageGauge
from textual.app import App, ComposeResult
from tui_helpers import ScreenHost, make_repo, make_report, wait_until

SIZE = (80, 24)


class GaugeLevels(App[None]):
    def compose(self) -> ComposeResult:
        for pct, step in ((42.0, 1), (78.0, 2), (94.0, 3)):
            gauge = UsageGauge()
            gauge.history = [10.0 * i for i in range(step * 3)]
            gauge.report = make_report(pct, step=step, red_flags=["tool results are 64% of the prompt"] if pct > 90 else [])
            yield gauge


def test_gauge_levels(snap_compare) -> None:
    assert snap_compare(GaugeLevels(), terminal_size=SIZE)


def test_permission_modal(snap_compare) -> None:
    req = PermissionRequest("c1", "edit_file", "edit", {"path": "calc.py"},
                            "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n")
    assert snap_compare(ScreenHost(lambda: PermissionModal(req)), terminal_size=SIZE)


def test_breakpoint_modal(snap_compare) -> None:
    assert snap_compare(ScreenHost(lambda: BreakpointModal(93.0)), terminal_size=SIZE)


def _events() -> list[Event]:
    rows: list[tuple[str, dict[str, Any]]] = [
        ("session_start", {"session": "s"}),
        ("user", {"text": "fix the add function", "turn": 1}),
        ("assistant", {"text": "reading", "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "calc.py"}}]}),
        ("tool_result", {"call_id": "c1", "name": "read_file", "content": "def add(a, b):\n    return a - b\n", "is_error": False}),
        ("tool_result", {"call_id": "c9", "name": "grep", "content": "ERROR x\n… 4,990 lines cut …", "is_error": False,
                         "spill": {"handle": "spill-abc", "lines": 5000}}),
        ("compaction", {"first_id": 1, "last_id": 4, "summary": "Decisions: none", "method": "extractive"}),
        ("user", {"text": "now run the tests", "turn": 2}),
        ("memory", {"op": "remember", "type": "constraint", "text": "不要修改配置文件", "turn": 2}),
    ]
    return [Event(i, kind, data, 0.0) for i, (kind, data) in enumerate(rows)]


def _snapshot() -> ContextSnapshot:
    """A real build of a small log (deterministic: a pure function of its inputs)."""
    budget = Budget(8000, max_output=1000)
    inputs = BuildInputs(events=_events(), system="You are a test agent.\n\n# Project instructions (AGENTS.md)\n\nBe brief.",
                         tools=[ToolSpec("read_file", "read a file", {"type": "object"})], budget=budget,
                         counter=CachedCounter(get_counter("o200k_base")), step=3, turn=2, calibration_ratio=1.08)
    result = build(inputs)
    return ContextSnapshot(result, sent=True, shares={s: budget.base(s) for s in budget.fractions}, tokenizer="o200k_base",
                           events=_events())


def test_context_screen(snap_compare) -> None:
    assert snap_compare(ScreenHost(lambda: ContextScreen(_snapshot())), terminal_size=(90, 44))


def test_rewind_picker(snap_compare) -> None:
    turns = [
        TurnInfo(1, 1, 0.0, "fix the add function", "c1", True, ["calc.py"], [FileStat("calc.py", "M", 1, 1)]),
        TurnInfo(2, 6, 0.0, "把日志里的错误找出来 [/] no markup", None, False),
    ]

    async def until_armed(pilot: Any) -> None:  # the list takes the focus once the box takes answers (tui/app/screens/question.py)
        await wait_until(pilot, lambda: pilot.app.screen.armed and pilot.app.screen.focused is not None)

    assert snap_compare(ScreenHost(lambda: RewindScreen(turns)), terminal_size=SIZE, run_before=until_armed)


def test_setup_screen(snap_compare) -> None:
    assert snap_compare(ScreenHost(lambda: SetupScreen("no model configured")), terminal_size=SIZE)


def _chat_session(tmp_path: Path) -> Any:
    """A session log written as a finished turn would leave it, with fixed ids and durations."""
    from ctxagent.agent.config import load_config
    from ctxagent.agent.session import Session
    from ctxagent.context.history import SessionLog

    repo = make_repo(tmp_path / "repo")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "unused"}]), encoding="utf-8")
    config = load_config(repo, {"model": f"scripted:{script}", "permission_mode": "yolo", "window": 20_000})
    state = repo / ".ctxagent"
    log = SessionLog.create(state / "sessions", "20250101-120000-abc123")
    log.append(SessionStartData(session=log.session_id, model=config.model, cwd=str(repo)))
    log.append(UserData(text="fix the add function in calc.py", turn=1))
    log.append(ContextReportData(step=1, report=make_report(31, window=20_000, step=1).to_dict(), warm=""))
    log.append(AssistantData(text="Reading calc.py.", step=1, turn=1, stop_reason="tool_use",
               tool_calls=[{"id": "c1", "name": "read_file", "arguments": {"path": "calc.py"}}],
               usage={"input_tokens": 900, "output_tokens": 20}))
    log.append(ToolResultData(call_id="c1", name="read_file", content="1\tdef add(a, b):\n2\t    return a - b",
               is_error=False, duration_ms=3, meta={"files": ["calc.py"]}, turn=1))
    log.append(ContextReportData(step=2, report=make_report(48, window=20_000, step=2).to_dict(), warm=""))
    log.append(AssistantData(text="Fixing the operator.", step=2, turn=1, stop_reason="tool_use",
               tool_calls=[{"id": "c2", "name": "edit_file",
                            "arguments": {"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}}],
               usage={"input_tokens": 1100, "output_tokens": 40}))
    log.append(ToolResultData(call_id="c2", name="edit_file", content="edited calc.py", is_error=False, duration_ms=5,
               meta={"files": ["calc.py"], "diff": "--- a/calc.py\n+++ b/calc.py\n-    return a - b\n+    return a + b\n"},
               turn=1))
    log.append(ContextReportData(step=3, report=make_report(78, window=20_000, step=3).to_dict(), warm=""))
    log.append(AssistantData(text="Done: **fixed** `add` — 你好.", step=3, turn=1, stop_reason="end_turn", tool_calls=[],
               usage={"input_tokens": 1300, "output_tokens": 30}))
    return Session(root=repo, state_dir=state, config=config, log=log)


def test_main_chat_screen(snap_compare, tmp_path: Path) -> None:
    from ctxagent.agent.factory import create_agent
    from ctxagent.tui.app.app import CtxApp

    app = CtxApp(_chat_session(tmp_path), create_agent)

    async def until_ready(pilot: Any) -> None:
        await wait_until(pilot, lambda: app.agent is not None and not app.session_screen.busy, 60)
        app.session_screen.input.cursor_blink = False  # a blinking cursor would make the picture depend on timing
        await pilot.pause()

    assert snap_compare(app, terminal_size=(90, 30), run_before=until_ready)
