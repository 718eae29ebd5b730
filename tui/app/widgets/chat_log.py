"""The scrolling transcript, and how each agent event that belongs in it is shown: streamed
replies, tool panels, notices, and the summary a compaction made (open, so it is read)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxagent.agent import (
    DIRECT_CALL_PREFIX,
    AgentEvent,
    AssistantDelta,
    AssistantDone,
    CompactionDone,
    Notice,
    SubAgentUpdate,
    ToolFinished,
    ToolStarted,
)
from ctxagent.tui.app.widgets.chat import NoticeLine, SummaryPanel, ToolPanel
from ctxagent.tui.app.widgets.gauge import human_tokens
from textual.containers import VerticalScroll

if TYPE_CHECKING:
    from ctxagent.tui.app.widgets.reply import AssistantMessage


class ChatLog(VerticalScroll):
    """The scrolling transcript; stays anchored to the bottom while new content arrives."""

    DEFAULT_CSS = """
    ChatLog { height: 1fr; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._assistant: AssistantMessage | None = None  # the reply being streamed

    def on_mount(self) -> None:
        self.anchor()

    def panel(self, call_id: str) -> ToolPanel | None:
        for p in self.query(ToolPanel):
            if p.call_id == call_id:
                return p
        return None

    async def show_subagent(self, ev: SubAgentUpdate) -> None:
        """A sub-agent's event: into its panel, mounted under its `task` call on its first event."""
        from ctxagent.tui.app.widgets.subagent_panel import SubAgentPanel, panel_for

        found = [p for p in self.query(SubAgentPanel) if p.call_id == ev.call_id]
        panel = found[0] if found else panel_for(ev)
        if not found:
            call = self.panel(ev.call_id)
            await (self.mount(panel, after=call) if call is not None else self.mount(panel))
        panel.feed(ev.event)

    def end_reply(self) -> None:
        """A step starts or a turn ends: the next text is a new reply."""
        self._assistant = None

    async def show(self, ev: AgentEvent) -> None:
        """Show an agent event that belongs in the transcript (others are ignored here)."""
        match ev:
            case AssistantDelta():
                if self._assistant is None:
                    from ctxagent.tui.app.widgets.reply import AssistantMessage

                    self._assistant = AssistantMessage()
                    await self.mount(self._assistant)
                await self._assistant.write(ev.text)
            case AssistantDone():
                if self._assistant is not None:
                    await self._assistant.finish(ev.text + (" …[interrupted]" if ev.partial else "") if ev.text else None)
                self._assistant = None
            case ToolStarted():
                panel = ToolPanel(ev.call_id, ev.name, dict(ev.arguments))
                panel.collapsed = not (ev.call_id.startswith(DIRECT_CALL_PREFIX) and ev.name == "shell")  # !command: open
                await self.mount(panel)
            case ToolFinished():
                shown = self.panel(ev.call_id)
                if shown is None:
                    shown = ToolPanel(ev.call_id, ev.name, {})
                    await self.mount(shown)
                shown.finish(ev.content, ev.is_error, ev.duration_ms, ev.meta)
            case Notice():
                await self.mount(NoticeLine(ev.message, ev.level))
            case SubAgentUpdate():
                await self.show_subagent(ev)
            case CompactionDone():
                await self.mount(SummaryPanel(compaction_title(ev), ev.summary, collapsed=False))


def compaction_title(ev: CompactionDone) -> str:
    """`≡ compacted turns 1–3: 14 messages replaced by this model summary · 5.2k → 1.9k tokens …`."""
    if ev.first_turn:
        span = f"turn {ev.first_turn}" if ev.first_turn == ev.last_turn else f"turns {ev.first_turn}–{ev.last_turn}"
    else:
        span = "older steps of this turn"
    how = "model summary" if ev.method == "model" else "summary (extracted, no model)"
    sizes = f" · {human_tokens(ev.tokens_before)} → {human_tokens(ev.tokens_after)} tokens" if ev.tokens_before else ""
    return (f"≡ compacted {span}: {ev.messages} message{'s' if ev.messages != 1 else ''} replaced by this {how}"
            f"{sizes} · the originals stay in the log (/rewind brings them back)")
