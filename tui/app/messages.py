"""The messages that carry work done on worker threads into the UI thread.

The agent calls `on_event(ev)` on its own thread; the session screen wraps the event in an
`AgentUpdate` and `post_message` (thread-safe) queues it, so widgets are only ever touched on the UI
thread, in the order the agent emitted the events. Session actions run on threads too (they may
call the model or touch files) and end with one `ActionFinished`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:
    from ctxagent.agent import Agent, AgentEvent, Session


class AgentUpdate(Message):
    """One agent event (ctxagent.agent.updates): the screen renders it by its type."""

    def __init__(self, event: AgentEvent) -> None:
        super().__init__()
        self.event = event


class AgentReady(Message):
    """The agent for a session was built on a worker thread — or could not be (`problem`)."""

    def __init__(self, session: Session, agent: Agent | None, problem: str = "") -> None:
        super().__init__()
        self.session = session
        self.agent = agent
        self.problem = problem


class AskUser(Message):
    """A question from a worker (tui/app/bridge.py): push `modal`, and call `done` with its answer. A
    message, not a blocking call into the UI thread: a worker never waits on an app that is closing."""

    def __init__(self, modal: Any, done: Callable[[Any], None]) -> None:
        super().__init__()
        self.modal = modal
        self.done = done


class SetupNeeded(Message):
    """No usable model for the session: the app shows the set-up screen."""

    def __init__(self, problem: str) -> None:
        super().__init__()
        self.problem = problem


@dataclass(frozen=True)
class Outcome:
    """How a session action ended: a line for the chat, and what the screen must redo."""

    ok: bool
    detail: str = ""  # a notice for the chat ("" for none)
    rerender: bool = False  # the conversation changed (a rewind): render the transcript again
    session: Session | None = None  # switch to this session (new session, resume) …
    agent: Agent | None = None  # … with this agent, built on the worker
    restore_input: str = ""  # text to put back in the input box (a rewound user message)
    then: Callable[[], None] | None = None  # run on the UI thread after (e.g. open a screen the work prepared)


class ActionFinished(Message):
    def __init__(self, name: str, outcome: Outcome) -> None:
        super().__init__()
        self.name = name
        self.outcome = outcome
