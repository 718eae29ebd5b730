"""How code on a worker thread — the agent's turn, a session action — reaches the UI thread.

Events go over as `AgentUpdate` messages (`post_message` is thread-safe). Questions (allow this
edit? overwrite files changed outside the agent?) go over as `AskUser` messages — never a call that
blocks until the UI thread runs it, which an app that is closing never does — and the worker waits
for the answer, blocking only itself, never the UI. When the app is closing (however it closes: /quit,
Ctrl+Q, an error) the question gives up: a permission asked is denied, and the worker ends.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ctxagent.agent import AgentEvent, PermissionDecision, PermissionRequest
from ctxagent.tui.app.messages import AgentUpdate, AskUser

if TYPE_CHECKING:
    from ctxagent.tui.app.control import SessionControl


class WorkerBridge:
    def __init__(self, control: SessionControl) -> None:
        self.control = control

    def on_event(self, ev: AgentEvent) -> None:
        """The agent's `on_event`, called on its worker thread."""
        if not self.control.stopping:
            self.control.post_message(AgentUpdate(ev))

    def approve(self, request: PermissionRequest) -> PermissionDecision:
        """The agent's approver: the permission modal, answered by the user."""
        from ctxagent.tui.app.screens.modals import PermissionModal

        answer = self.ask(PermissionModal(request))
        if not isinstance(answer, PermissionDecision):
            return PermissionDecision(allow=False, reason="ctxagent is closing" if self.control.stopping else "no answer")
        return answer

    def confirm_overwrite(self, paths: list[str]) -> bool:
        """For a code rewind: overwrite files changed outside the agent since that turn?"""
        from ctxagent.tui.app.screens.pickers import (
            ConfirmModal,  # Markdown and OptionList: not before the first frame
        )

        shown = "\n".join(paths[:20]) + (f"\n… and {len(paths) - 20} more" if len(paths) > 20 else "")
        return bool(self.ask(ConfirmModal("Overwrite files changed outside the agent since that turn?", shown)))

    def ask(self, modal: Any) -> Any:
        """Push `modal` and wait (this worker thread only) for what it is dismissed with; None when closing."""
        answered = threading.Event()
        box: list[Any] = []

        def done(value: Any) -> None:
            box.append(value)
            answered.set()

        if self.closing():
            return None
        self.control.post_message(AskUser(modal, done))
        while not answered.wait(0.1):
            if self.closing():
                return None
        return box[0]

    def closing(self) -> bool:
        """The app is closing or gone: nobody will answer."""
        return self.control.stopping or not self.control.app.is_running
