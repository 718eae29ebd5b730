"""A sub-agent under its `task` call: a collapsible panel with its own small gauge and step list,
fed by the child's events (`SubAgentUpdate`, forwarded through the parent's stream)."""

from __future__ import annotations

from ctxagent.agent import AgentEvent, ContextBuilt, StepStarted, SubAgentUpdate, ToolStarted, TurnFinished
from ctxagent.context import usage_text
from ctxagent.tui.app.safe import markup_safe, plain
from ctxagent.tui.app.widgets.gauge import human_tokens
from textual.widgets import Collapsible, Static

MAX_STEP_LINES = 200  # a long sub-agent keeps its latest steps in the panel; the log keeps all


class SubAgentPanel(Collapsible):
    DEFAULT_CSS = """
    SubAgentPanel { margin: 0 0 0 2; padding: 0; border: none; background: $panel; }
    SubAgentPanel .subagent-gauge { color: $text-muted; padding: 0 1; }
    SubAgentPanel .subagent-steps { padding: 0 1; }
    """

    def __init__(self, call_id: str, session: str, description: str) -> None:
        self.call_id = call_id
        self.session = session
        self.description = description
        self.state = "running"
        self.steps: list[str] = []
        self.used = 0
        self.window = 0
        self._gauge = Static(self._gauge_text(), classes="subagent-gauge")
        self._steps = Static("", classes="subagent-steps")
        super().__init__(self._gauge, self._steps, title=self._title_text(), collapsed=True)

    def _title_text(self) -> str:
        icon = {"running": "◌", "end_turn": "✓"}.get(self.state, "!")
        return markup_safe(f"{icon} sub-agent: {self.description} · {len(self.steps)} step(s)" + (
            "" if self.state in ("running", "end_turn") else f" · {self.state}"))

    def _gauge_text(self) -> str:
        if not self.window:
            return f"session {self.session} · starting"
        pct = 100 * self.used / self.window
        bar = "█" * round(pct / 10) + "░" * (10 - round(pct / 10))
        return f"{bar} {human_tokens(self.used)} / {human_tokens(self.window)} ({usage_text(pct)}) · session {self.session}"

    def feed(self, ev: AgentEvent) -> None:
        match ev:
            case StepStarted():
                self.steps.append(f"step {ev.step}")
            case ContextBuilt():
                self.used, self.window = int(ev.report.total), int(ev.report.window)
            case ToolStarted():
                if self.steps:
                    self.steps[-1] += f" · {ev.name}"
            case TurnFinished():
                self.state = ev.stop_reason
            case _:
                return
        del self.steps[:-MAX_STEP_LINES]
        self._gauge.update(plain(self._gauge_text()))
        self._steps.update(plain("\n".join(self.steps)))
        self.title = self._title_text()


def panel_for(update: SubAgentUpdate) -> SubAgentPanel:
    return SubAgentPanel(update.call_id, update.session, update.description)
