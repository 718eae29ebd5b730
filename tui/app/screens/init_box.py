"""/init in the app: the model drafts an AGENTS.md in a turn (agent/instructions/draft.py), and the draft
opens in a box — the user edits it and writes it (Ctrl+S), or cancels (Esc). An existing AGENTS.md is
never overwritten silently: the box says it exists and its button says "Overwrite"; a file changed since
the draft was shown is not written."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ctxagent.tui.app.safe import plain
from ctxagent.tui.app.screens.modals import EDITOR_CSS, EditorModal
from ctxagent.tui.app.screens.question import Answer
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static, TextArea

if TYPE_CHECKING:
    import threading

    from ctxagent.agent import Agent, InitDraft, TurnFinished
    from ctxagent.tui.app.control import SessionControl

_PENDING: set[str] = set()  # sessions whose running turn is an /init draft


def start_init(control: SessionControl, focus: str) -> None:
    """Send the drafting request as a turn (shown as /init); its answer opens the box (`offer_init`)."""
    from ctxagent.agent import init_prompt

    root = control.session.root
    sid = str(control.session.id)
    shown = "/init" + (f" {focus.strip()}" if focus.strip() else "")

    def run(agent: Agent, cancel: threading.Event) -> TurnFinished:  # a TurnRunner (tui/app/control.py)
        return agent.run_turn(init_prompt(root, focus), cancel)

    if control.start_turn(shown, run):
        _PENDING.add(sid)


def offer_init(control: SessionControl, ev: TurnFinished) -> bool:
    """After an /init turn: open the box on its draft (or the template, saying why). True when it did."""
    from ctxagent.agent import init_draft

    sid = str(control.session.id)
    if sid not in _PENDING:
        return False
    _PENDING.discard(sid)
    if ev.stop_reason == "cancelled":
        control.notice("/init cancelled: nothing written")
        return True
    answered = ev.stop_reason == "end_turn" and bool(ev.text.strip())
    draft = init_draft(control.session.root, ev.text, answered, why=f"the turn ended: {ev.stop_reason}")
    control.app.push_screen(InitModal(draft), lambda text: _confirmed(control, draft, text))
    return True


class InitModal(EditorModal):
    """The AGENTS.md draft in an editor: Ctrl+S writes it (dismisses with the text), Esc cancels (None)."""

    DEFAULT_CSS = EDITOR_CSS.format(name="InitModal")
    EMPTY = "The draft is empty: nothing to write."

    def __init__(self, draft: InitDraft) -> None:
        super().__init__()
        self.draft = draft

    def answers(self) -> Sequence[Answer]:
        existing = self.draft.existing is not None
        return (Answer("confirm", f"{'Overwrite' if existing else 'Write'} AGENTS.md", "ctrl+s",
                       "warning" if existing else "primary"), Answer("cancel", "Cancel", "escape"))

    def compose(self) -> ComposeResult:
        d = self.draft
        source = "drafted by the model" if d.how == "model" else f"a {d.how}"
        with Vertical():
            yield Static(Text("■ A new AGENTS.md for this repository", style="bold"))
            if d.existing is not None:
                lines = len(d.existing.splitlines())
                yield Static(plain(f"AGENTS.md exists ({lines:,} lines): writing replaces it — git diff AGENTS.md "
                                   "shows the change.", "bold yellow"))
            yield Static(plain(f"The draft ({source}). Edit it, then write it; it is part of the system prompt "
                               "from the next session on."))
            yield TextArea(d.text, id="init-text", soft_wrap=True)
            yield from self.answer_widgets()

    def finished(self, text: str) -> str:
        return text if text.endswith("\n") else text + "\n"


def _confirmed(control: SessionControl, draft: InitDraft, text: str | None) -> None:
    from ctxagent.agent import write_agents_md
    from ctxagent.context import CtxagentError

    if text is None:
        control.notice("/init cancelled: AGENTS.md not written")
        return
    try:
        path = write_agents_md(control.session.root, text, draft.replaces)
    except (CtxagentError, OSError) as exc:
        control.notice(f"/init: {exc}", "error")
        return
    control.notice(f"wrote {path.name} ({len(text.splitlines()):,} lines) — part of the system prompt from the next "
                   "session on (/new)")
