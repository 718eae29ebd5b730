"""What the parts around a session screen may do with it: `SessionControl`.

The slash commands (tui/app/slash.py), the worker bridge (tui/app/bridge.py) and the agent's start
(tui/app/agent_start.py) work on a session through this Protocol, not through the screen's widgets and
private state; `SessionScreen` (tui/app/screens/session_screen.py) is the one implementation. Keeping them on
this side of the Protocol is also what keeps their imports one-way: none of them imports the screen.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ctxagent.agent import Agent, Session
    from ctxagent.tui.app.messages import Outcome
    from textual.app import App
    from textual.message import Message
    from textual.notifications import SeverityLevel
    from textual.worker import Worker

AgentFactory = Callable[..., "Agent"]  # (session, on_event=, approver=) -> Agent
TurnRunner = Callable[["Agent", threading.Event], Any]  # runs one turn on the worker thread
SessionOpener = Callable[..., "Session"]  # open_session(root, config, resume=...)


class SessionControl(Protocol):
    """One session on screen: its session and agent, what runs, and how to tell the user."""

    # -- state (read on the UI thread; `stopping` and `post_message` also from workers) -------------
    @property
    def session(self) -> Session: ...

    @property
    def agent(self) -> Agent | None: ...  # None until the agent is built

    @property
    def busy(self) -> bool: ...  # a turn or a session action is running

    @property
    def stopping(self) -> bool: ...  # the app is closing: workers must not wait for the UI

    @property
    def open_session(self) -> SessionOpener | None: ...  # None: ctxagent.agent.open_session

    @property
    def model_label(self) -> str: ...  # the model the status line shows

    @property
    def app(self) -> App[Any]: ...

    def post_message(self, message: Message) -> bool: ...  # thread-safe

    def run_worker(self, work: Callable[[], Any], *, name: str, group: str, thread: bool) -> Worker[Any]: ...

    # -- telling the user ---------------------------------------------------------------------------
    def say(self, message: str, severity: SeverityLevel = "information") -> None: ...  # a toast

    def notice(self, text: str, severity: str = "info") -> None: ...  # a line in the chat

    def set_activity(self, activity: str) -> None: ...  # the status line's "what is happening"

    def clear_chat(self) -> None: ...  # the view only: the log keeps everything

    def show_session_facts(self) -> None: ...  # status line and gauge thresholds from the session

    # -- the agent and its work -------------------------------------------------------------------
    def new_agent(self, session: Session) -> Agent: ...  # on a worker thread: it is slow to build

    def show_agent(self, agent: Agent) -> None: ...  # make it current

    def start_turn(self, shown: str, run: TurnRunner) -> bool: ...  # show `shown`, run (or queue) the turn

    def run_turn(self, run: TurnRunner) -> None: ...  # on a worker, with the screen busy

    def start_action(self, name: str, work: Callable[[], Outcome], *, activity: str = "") -> None: ...

    def confirm_overwrite(self, paths: list[str]) -> bool: ...  # from a worker: asks, and waits

    def quit(self) -> None: ...
