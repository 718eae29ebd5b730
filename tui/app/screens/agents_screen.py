"""/agents: the sub-agents of this session, running and finished, and one's transcript.

The list comes from the session log (each `task` result names its child) and from the panels of the
ones still running; a transcript is the child's own log, shown like a resumed session's chat
(tui/app/widgets/transcript.py)."""

from __future__ import annotations

from ctxagent.agent import child_rows, open_child_log
from ctxagent.context import SessionLog
from ctxagent.tui.app.safe import plain
from ctxagent.tui.app.widgets.transcript import transcript_widgets
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static


def agents_markdown(log: SessionLog, running: list[tuple[str, str, int]]) -> str:
    """The table /agents shows; `running`: (session, description, steps) of panels still running."""
    rows = [f"| {sid} | {desc} | running | {steps} | |" for sid, desc, steps in running]
    for r in child_rows(log):
        u = r.cost.usage if r.cost is not None else None
        tokens = f"{u.prompt_tokens + u.output_tokens:,}" if u is not None else "log missing"
        rows.append(f"| {r.session} | {r.description} | {r.stop_reason} | {r.steps} | {tokens} |")
    if not rows:
        return "## Sub-agents\n\nThis session has started no sub-agent yet (the model's `task` tool)."
    return ("## Sub-agents\n\n| session | task | state | steps | tokens |\n| --- | --- | --- | ---: | ---: |\n"
            + "\n".join(rows) + "\n\nOpen one's transcript with `/agents ID` (the first characters do).")


def find_child(log: SessionLog, ref: str, running: list[str]) -> str | None:
    known = list(dict.fromkeys([*running, *(r.session for r in child_rows(log))]))
    matches = [s for s in known if s.startswith(ref.strip())]
    return matches[0] if len(matches) == 1 else None


class AgentTranscriptScreen(ModalScreen[None]):
    """One sub-agent's transcript, from its own session log; Esc or q closes it."""

    DEFAULT_CSS = """
    AgentTranscriptScreen { align: center middle; background: $background 60%; }
    AgentTranscriptScreen > VerticalScroll { width: 96%; height: 90%; border: round $accent; background: $surface; }
    """
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Close")]

    def __init__(self, parent: SessionLog, session: str) -> None:
        super().__init__()
        self.session = session
        self.child = open_child_log(parent, session)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(plain(f"sub-agent {self.session} — its own session log (ctxagent inspect {self.session})"))
            yield from transcript_widgets(self.child.events)
        yield Footer()
