"""/handoff and the handoff tool in the app: the drafted opening message of a new session, in an editor.

The draft (agent/session_ops.py handoff_draft: goal, the user's constraints, open tasks, files, handles
to this session) opens in a modal with a TextArea, like Amp's Handoff. The user edits it; Confirm
(Ctrl+S) opens a new session, child of this one, seeded with the user's constraints, and sends the
edited text as its first message; Cancel (Esc) starts nothing — the draft stays in the old log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxagent.agent import open_handoff
from ctxagent.tui.app.messages import Outcome
from ctxagent.tui.app.screens.modals import EDITOR_CSS, EditorModal
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static, TextArea

if TYPE_CHECKING:
    from ctxagent.agent import HandoffDrafted
    from ctxagent.tui.app.control import SessionControl


class HandoffModal(EditorModal):
    """The handoff editor: dismisses with the edited text (Confirm) or None (Cancel)."""

    DEFAULT_CSS = EDITOR_CSS.format(name="HandoffModal")
    EMPTY = "The handoff message is empty: write what the new session should do."
    CONFIRM = "Start new session"

    def __init__(self, draft: HandoffDrafted) -> None:
        super().__init__()
        self.draft = draft

    def compose(self) -> ComposeResult:
        by = "The model drafted" if self.draft.by == "model" else "Drafted"
        with Vertical():
            yield Static(Text("■ Hand off to a new session", style="bold"))
            yield Static(f"{by} the new session's first message from this one. Edit it, then start the new "
                         "session with it; this session stays as it is.")
            yield TextArea(self.draft.text, id="handoff-text", soft_wrap=True)
            yield from self.answer_widgets()


def edit_handoff(control: SessionControl, draft: HandoffDrafted) -> None:
    """Open the editor on a draft; what the user confirms starts the new session."""
    control.app.push_screen(HandoffModal(draft), lambda text: _confirmed(control, draft, text))


def _confirmed(control: SessionControl, draft: HandoffDrafted, text: str | None) -> None:
    if text is None:
        control.notice(f"handoff cancelled: nothing started (the draft stays in this session's log, event {draft.event_id})")
        return
    old = control.session

    def work() -> Outcome:
        new = open_handoff(old, text, control.open_session)
        agent = control.new_agent(new)
        return Outcome(True, f"new session {new.id}, handed off from {old.id}", session=new, agent=agent,
                       then=lambda: _send(control, text))

    control.start_action("handoff", work, activity="handing off")


def _send(control: SessionControl, text: str) -> None:
    control.start_turn(text, lambda agent, cancel: agent.run_turn(text, cancel))
