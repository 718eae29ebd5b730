"""Small modals: yes/no confirmation, an information page (Markdown), and the /resume session picker."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

from ctxagent.tui.app.safe import flat, one_line, plain
from ctxagent.tui.app.screens.modals import MODAL_CSS
from ctxagent.tui.app.screens.question import Answer, GuardedModal
from ctxagent.tui.app.widgets.status import short_model
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Markdown, OptionList, Static
from textual.widgets.option_list import Option


class ConfirmModal(GuardedModal[bool]):
    """A yes/no question (overwrite files changed outside the agent? send a project's command?): 1 says
    yes, 2, Enter or Escape say no — a `GuardedModal`, so nothing typed, ahead or not, ever says yes."""

    DEFAULT_CSS = MODAL_CSS.format(name="ConfirmModal")
    SAFE = "no"
    SAFE_SAYS = "no"

    def __init__(self, question: str, detail: str = "") -> None:
        super().__init__()
        self.question = question
        self.detail = detail

    def answers(self) -> Sequence[Answer]:
        return (Answer("yes", "Yes", "1", "warning"), Answer("no", "No", "2"))

    def result(self, value: str) -> bool:
        return value == "yes"

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(plain(self.question, style="bold"))
            if self.detail:
                yield Static(plain(self.detail))
            yield from self.answer_widgets()


class InfoModal(ModalScreen[None]):
    """A page of Markdown (/help, /cost); Esc or q closes it."""

    DEFAULT_CSS = """
    InfoModal { align: center middle; background: $background 60%; }
    InfoModal > VerticalScroll { width: 96%; max-width: 110; height: auto; max-height: 90%;
        border: round $accent; background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Close")]

    def __init__(self, markdown: str) -> None:
        super().__init__()
        self.markdown = flat(markdown)  # it quotes model names and session text

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown(self.markdown)
        yield Footer()


def describe_session(path: Path) -> str:
    """`20250101-120000-abc123 · 12:00 · 3 turns · anthropic:claude-sonnet-5-5 · “first user line”` —
    read cheaply from the JSONL, one pass, parsing only the lines it needs. The model is the one the
    session last ran with, by the rule of `session_model` (agent/session.py): its newest step's, else
    the one its start names."""
    first, turns, model = "", 0, ""
    start_line = report_line = ""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if '"kind": "user"' in line:
                    turns += 1
                    if not first:
                        first = one_line(json.loads(line).get("data", {}).get("text", ""), 60)
                elif '"kind": "context_report"' in line:
                    report_line = line
                elif '"kind": "session_start"' in line and not start_line:
                    start_line = line
        for line in (report_line, start_line):
            model = str(json.loads(line).get("data", {}).get("model") or "") if line else ""
            if model:
                break
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    when = time.strftime("%m-%d %H:%M", time.localtime(path.stat().st_mtime)) if path.exists() else ""
    count = f"{turns} turn{'' if turns == 1 else 's'}"
    return f"{path.stem} · {when} · {count} · {short_model(model) if model else 'model ?'} · {first or '(no messages)'}"


class SessionPicker(GuardedModal[str | None]):
    """Pick a session to resume: ↑ ↓ and Enter dismiss with its id, Esc with None. A `GuardedModal`: the
    list takes the focus once the box is armed, so an Enter typed ahead picks nothing."""

    DEFAULT_CSS = """
    SessionPicker { align: center middle; background: $background 60%; }
    SessionPicker > Vertical { width: 96%; height: 80%; border: round $accent; background: $surface; padding: 0 1; }
    SessionPicker OptionList { height: 1fr; }
    """
    HOME = "#session-list"

    def __init__(self, sessions: list[Path], current: str = "") -> None:
        super().__init__()
        self.sessions = list(reversed(sessions))  # newest first
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Resume a session (newest first)", style="bold"))
            options = [
                Option(plain(describe_session(p) + ("  ← current" if p.stem == self.current else "")), id=p.stem)
                for p in self.sessions
            ]
            yield OptionList(*options, id="session-list")

    def keys_line(self) -> str:
        return "↑↓: a session · Enter: resume it · Esc: cancel"

    def result(self, value: str) -> str | None:
        return value if value != self.SAFE else None

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.armed and event.option.id:
            self.answer(event.option.id)
