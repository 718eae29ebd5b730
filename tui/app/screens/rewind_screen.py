"""`/rewind`: pick a user turn, then code and conversation / conversation only / code only.

The picker only chooses; the session screen runs the rewind (agent/session_ops.py) with the choice.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxagent.agent import REWIND_MODES, RewindMode, TurnInfo
from ctxagent.tui.app.safe import one_line, plain
from ctxagent.tui.app.screens.question import Answer, GuardedModal
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Button, DataTable, Static

MODES = ("both", "conversation", "code")
MODE_LABEL = {"both": "Both: code and conversation", "conversation": "Conversation only", "code": "Code only"}


@dataclass(frozen=True)
class RewindChoice:
    turn: int
    mode: RewindMode


def _when(ts: Any) -> str:
    if isinstance(ts, (int, float)) and ts > 0:
        return time.strftime("%H:%M:%S", time.localtime(ts))
    return str(ts or "")


MESSAGE_CHARS = 40  # so the files and diffstat columns stay on screen at 80 columns


def turn_row(info: TurnInfo) -> tuple[str, str, Text, Text, str]:
    """(turn, time, first line, files, diffstat) — message and files as plain Text (never markup)."""
    files = info.files_changed
    shown = ", ".join(files[:2]) + (f" +{len(files) - 2}" if len(files) > 2 else "")
    return (str(info.turn), _when(info.time), plain(one_line(info.first_line, MESSAGE_CHARS)), plain(shown or "—"),
            info.diffstat_summary())


class RewindScreen(GuardedModal[RewindChoice | None]):
    """Pick a turn (↑ ↓), then what to restore: 1 both, 2 the conversation, 3 the code (or Enter on the
    turn, then Enter on a button); Esc cancels. A `GuardedModal`: nothing typed ahead rewinds anything,
    and the list takes the focus once the box is armed."""

    DEFAULT_CSS = """
    RewindScreen { align: center middle; background: $background 60%; }
    RewindScreen > Vertical { width: 96%; height: 90%; border: round $accent; background: $surface; padding: 0 1; }
    RewindScreen DataTable { height: 1fr; }
    RewindScreen .question-answers { margin-top: 0; }
    """
    HOME = "#rewind-table"

    def __init__(self, turns: list[TurnInfo], has_code: bool = True) -> None:
        super().__init__()
        self.turns = list(turns)
        self.has_code = has_code

    def answers(self) -> Sequence[Answer]:
        return tuple(Answer(mode, MODE_LABEL[mode], str(i), disabled=mode != "conversation" and not self.has_code)
                     for i, mode in enumerate(MODES, 1))

    def keys_line(self) -> str:
        return "↑↓: a turn · 1/2/3: rewind to it · Enter: choose · Esc: cancel"

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Rewind to the start of a turn — pick a turn, then what to restore", style="bold"))
            yield DataTable(id="rewind-table", cursor_type="row")
            yield Static(
                "Conversation rewind hides later messages (they stay in the log); code rewind restores "
                "files as they were before that turn.",
                id="rewind-help",
            )
            yield from self.answer_widgets()

    def on_mount(self) -> None:  # Textual calls GuardedModal's on_mount too
        table = self.query_one(DataTable)
        table.add_columns("turn", "time", "message", "files", "diff")
        for info in self.turns:
            table.add_row(*turn_row(info), key=str(info.turn))
        if self.turns:
            table.move_cursor(row=len(self.turns) - 1)
        else:
            self.query_one("#rewind-help", Static).update("No user turns to rewind to yet.")

    def selected_turn(self) -> int | None:
        table = self.query_one(DataTable)
        if not self.turns or table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return int(key) if key is not None else None

    def answer(self, value: str) -> None:
        if value in MODES and value != "conversation" and not self.has_code:
            self.notify("No code checkpoints in this session; conversation only.", severity="warning")
            return
        if value in MODES and self.selected_turn() is None:
            return
        super().answer(value)

    def result(self, value: str) -> RewindChoice | None:
        mode = next((m for m in REWIND_MODES if m == value), None)  # the answer's string, as the agent's type
        turn = self.selected_turn()
        return RewindChoice(turn, mode) if mode is not None and turn is not None else None

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.query_one("#both" if self.has_code else "#conversation", Button).focus()
