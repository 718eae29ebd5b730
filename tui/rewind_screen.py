"""`/rewind`: pick a user turn, then code and conversation / conversation only / code only.

The picker only chooses; the session screen runs the rewind (agent/session_ops.py) with the choice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ctxagent.agent import REWIND_MODES, RewindMode, TurnInfo
from ctxagent.tui.safe import one_line, plain
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Footer, Static

MODES = ("both", "conversation", "code")
MODE_LABEL = {"both": r"\[B]oth: code and conversation", "conversation": r"\[C]onversation only", "code": r"Code \[o]nly"}  # \[ : a literal bracket, not markup


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


class RewindScreen(ModalScreen[RewindChoice | None]):
    DEFAULT_CSS = """
    RewindScreen { align: center middle; background: $background 60%; }
    RewindScreen > Vertical { width: 96%; height: 90%; border: round $accent; background: $surface; padding: 0 1; }
    RewindScreen DataTable { height: 1fr; }
    RewindScreen Horizontal { height: auto; }
    RewindScreen Button { margin-right: 1; }
    """
    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("b", "choose('both')", "Both"),
        Binding("c", "choose('conversation')", "Conversation"),
        Binding("o", "choose('code')", "Code only"),
    ]

    def __init__(self, turns: list[TurnInfo], has_code: bool = True) -> None:
        super().__init__()
        self.turns = list(turns)
        self.has_code = has_code

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Rewind to the start of a turn — pick a turn, then what to restore", style="bold"))
            yield DataTable(id="rewind-table", cursor_type="row")
            yield Static(
                "Conversation rewind hides later messages (they stay in the log); code rewind restores "
                "files as they were before that turn.",
                id="rewind-help",
            )
            with Horizontal():
                for mode in MODES:
                    yield Button(MODE_LABEL[mode], id=f"mode-{mode}", disabled=mode != "conversation" and not self.has_code)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("turn", "time", "message", "files", "diff")
        for info in self.turns:
            table.add_row(*turn_row(info), key=str(info.turn))
        if self.turns:
            table.move_cursor(row=len(self.turns) - 1)
        else:
            self.query_one("#rewind-help", Static).update("No user turns to rewind to yet.")
        table.focus()

    def selected_turn(self) -> int | None:
        table = self.query_one(DataTable)
        if not self.turns or table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return int(key) if key is not None else None

    def action_choose(self, choice: str) -> None:
        mode = next((m for m in REWIND_MODES if m == choice), None)  # the binding's string, as the agent's type
        if mode is None:
            return
        if mode != "conversation" and not self.has_code:
            self.notify("No code checkpoints in this session; conversation only.", severity="warning")
            return
        turn = self.selected_turn()
        if turn is not None:
            self.dismiss(RewindChoice(turn, mode))

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_choose(str(event.button.id).removeprefix("mode-"))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.query_one("#mode-both" if self.has_code else "#mode-conversation", Button).focus()
