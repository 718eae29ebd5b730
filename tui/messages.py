"""Typed Textual messages carrying agent events from the worker thread into the UI.

The agent calls `on_event(ev)` on its own thread; `to_message(ev)` wraps the event in the matching
Message and `App.post_message` (thread-safe) queues it, so widgets are only ever touched on the UI
thread, in the order the agent emitted the events.
"""

from __future__ import annotations

from ctxagent.agent.events import (
    AgentEvent,
    AssistantDelta,
    AssistantDone,
    CompactionDone,
    ContextBuilt,
    Notice,
    StepStarted,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from textual.message import Message


class AgentMessage(Message):
    """Base of the agent-event messages; `event` is the agent's own frozen dataclass."""

    def __init__(self, event: object) -> None:
        super().__init__()
        self.event = event


class TurnBegan(AgentMessage):
    event: TurnStarted


class StepBegan(AgentMessage):
    event: StepStarted


class ContextMeasured(AgentMessage):
    event: ContextBuilt


class TextStreamed(AgentMessage):
    event: AssistantDelta


class ReplyDone(AgentMessage):
    event: AssistantDone


class ToolBegan(AgentMessage):
    event: ToolStarted


class ToolEnded(AgentMessage):
    event: ToolFinished


class NoticePosted(AgentMessage):
    event: Notice


class Compacted(AgentMessage):
    event: CompactionDone


class TurnEnded(AgentMessage):
    event: TurnFinished


_MESSAGE_FOR: dict[type, type[AgentMessage]] = {
    TurnStarted: TurnBegan,
    StepStarted: StepBegan,
    ContextBuilt: ContextMeasured,
    AssistantDelta: TextStreamed,
    AssistantDone: ReplyDone,
    ToolStarted: ToolBegan,
    ToolFinished: ToolEnded,
    Notice: NoticePosted,
    CompactionDone: Compacted,
    TurnFinished: TurnEnded,
}


def to_message(ev: AgentEvent | object) -> AgentMessage:
    """The typed message for an agent event (an unknown event type becomes a plain AgentMessage)."""
    return _MESSAGE_FOR.get(type(ev), AgentMessage)(ev)
