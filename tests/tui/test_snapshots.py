"""SVG snapshots of the views whose look matters: gauge levels, permission, breakpoint, /context, /rewind,
setup. Regenerate with `pytest tests/tui/test_snapshots.py --snapshot-update -n 0` after a deliberate change."""

from __future__ import annotations

from types import SimpleNamespace

from ctxagent.agent.events import PermissionRequest
from ctxagent.context.history import Event
from ctxagent.tui.context_screen import ContextScreen
from ctxagent.tui.gauge import UsageGauge
from ctxagent.tui.modals import BreakpointModal, PermissionModal
from ctxagent.tui.rewind_screen import RewindScreen
from ctxagent.tui.setup_screen import SetupScreen
from textual.app import App, ComposeResult
from tui_helpers import ScreenHost, make_report

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
    rows = [
        ("session_start", {"session": "s"}),
        ("user", {"text": "fix the add function", "turn": 1}),
        ("assistant", {"text": "reading", "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "calc.py"}}]}),
        ("tool_result", {"call_id": "c1", "name": "read_file", "content": "def add(a, b):\n    return a - b\n", "is_error": False}),
        ("context_report", {"report": make_report(81, step=2, spilled=1).to_dict(), "warm": "[constraint t1] 不要修改配置文件"}),
        ("compaction", {"first_id": 1, "last_id": 3, "summary": "Decisions: none", "method": "extractive"}),
        ("user", {"text": "now run the tests", "turn": 2}),
    ]
    return [Event(i, kind, data, 0.0) for i, (kind, data) in enumerate(rows)]


def test_context_screen(snap_compare) -> None:
    report = make_report(81, step=2, red_flags=["tool results are 61% of the prompt"])
    assert snap_compare(ScreenHost(lambda: ContextScreen(report, _events())), terminal_size=(80, 40))


def test_rewind_picker(snap_compare) -> None:
    turns = [
        SimpleNamespace(turn=1, time="10:02:11", first_line="fix the add function", files=["calc.py"], diffstat="+1 -1"),
        SimpleNamespace(turn=2, time="10:05:40", first_line="把日志里的错误找出来", files=[], diffstat=""),
    ]
    assert snap_compare(ScreenHost(lambda: RewindScreen(turns)), terminal_size=SIZE)


def test_setup_screen(snap_compare) -> None:
    assert snap_compare(ScreenHost(lambda: SetupScreen("no model configured")), terminal_size=SIZE)
