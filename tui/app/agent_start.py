"""The session's agent: built on a worker thread after the first frame, and shown when ready.

`AgentStarter` is owned by the session screen and works on it through `SessionControl`
(tui/app/control.py). After the first frame it starts importing the provider's SDK on a worker thread
(`warm_sdk`: seconds for `anthropic`, most of a launch), asks the trust question meanwhile (when the
repository's config had security-relevant keys ignored; agent/trust.py), then builds the agent —
tokenizer, memory, checkpoints, tools — on another worker. `AgentReady` brings it back to the UI
thread; a message typed before it was ready runs then (its first request waits for the SDK if it is
still loading), and a configuration it cannot use opens the set-up screen. Until both are done the
status line says what it waits for: "starting · loading the Anthropic SDK", "starting", or, with
the agent built, "loading the Anthropic SDK".
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from ctxagent.tui.app.messages import AgentReady, SetupNeeded
from ctxagent.tui.app.screens.modals import TrustModal
from textual.message import Message

if TYPE_CHECKING:
    from ctxagent.agent import Agent, Config, Session
    from ctxagent.tui.app.bridge import WorkerBridge
    from ctxagent.tui.app.control import AgentFactory, SessionControl, TurnRunner


TRUST_WAIT = "waiting for your answer: trust this repository?"

class SdkWarming(Message):
    """The provider SDK's import on the warm-up worker: started (`title`: "Anthropic") or over ("")."""

    def __init__(self, session: Session, title: str) -> None:
        super().__init__()
        self.session = session
        self.title = title


class AgentStarter:
    def __init__(self, control: SessionControl, bridge: WorkerBridge, make_agent: AgentFactory,
                 reload_config: Callable[[], Config] | None = None) -> None:
        self.control = control
        self.bridge = bridge
        self.make_agent = make_agent
        self.reload_config = reload_config  # the config again, from the same sources (after trusting the repository)
        self.queued: TurnRunner | None = None  # sent before the agent was ready: runs when it is
        self.warming = ""  # the provider whose SDK the warm-up worker is importing ("" : none, or done)
        self.waiting = True  # for an agent: from the first frame until one is built or could not be
        self.warmed = False  # the warm-up worker is done (the SDK is in, or there was none to import)
        self.asking_trust = False  # the trust box is open: the start waits for the user, and the status says so
        self._seen: dict[str, bytes | None] = {}  # the repository files the trust box showed (agent/trust.py)

    def start(self) -> None:
        """After the first frame: the SDK's import on a worker, the trust question when there is one
        (the import goes on while it is asked), then the agent."""
        self.warm_up()
        if not self._ask_trust():
            self.build()

    # -- the provider SDK -------------------------------------------------------------------------
    def warm_up(self) -> None:
        """Import the session's provider SDK on a worker thread, now."""
        session = self.control.session
        self.control.run_worker(partial(self._warm, session), thread=True, group="warm", name="import the SDK")

    def _warm(self, session: Session) -> None:
        from ctxagent.agent import warm_sdk

        def started(title: str) -> None:
            self.control.post_message(SdkWarming(session, title))

        try:
            warm_sdk(session.config, before=started)
        except Exception:  # noqa: BLE001 - a broken SDK install: building the agent (or its first request) says why
            pass
        finally:
            self.control.post_message(SdkWarming(session, ""))

    def warming_changed(self, message: SdkWarming) -> None:
        """On the UI thread: the status line says what the start still waits for."""
        if message.session is not self.control.session:
            return
        self.warming = message.title
        self.warmed = not message.title
        self.show_waiting()

    def show_waiting(self) -> None:
        sdk = f"loading the {self.warming} SDK" if self.warming else ""
        control = self.control
        if control.agent is None:
            if self.asking_trust:
                control.set_activity(TRUST_WAIT + (f" · {sdk}" if sdk else ""))
                return
            if not self.waiting:  # no agent could be built: the status says so ("no model"), not "starting"
                return
            control.set_activity(f"starting · {sdk}" if sdk else "starting")
        elif not control.busy:
            control.set_activity(sdk or "idle")

    # -- trust ------------------------------------------------------------------------------------
    def _ask_trust(self) -> bool:
        """Ask once about a repository config whose security-relevant keys were ignored (agent/trust.py),
        showing what its files hold (or what changed since they were trusted); the agent is built after
        the answer. False when there is nothing to ask."""
        from ctxagent.agent import describe_untrusted, needs_prompt, read_trusted_files
        from ctxagent.context import CtxagentError

        session = self.control.session
        ignored = session.config.ignored_keys
        if not ignored:
            return False
        try:
            seen = read_trusted_files(session.root)  # what the box shows is what a yes trusts
            if not needs_prompt(session.root, ignored, seen):
                return False
        except CtxagentError as exc:  # the files turned unreadable since the config was read: nothing is trusted
            self.control.say(str(exc), "error")
            return False
        self._seen = seen
        self.asking_trust = True
        self.control.set_activity(TRUST_WAIT)  # the agent starts after it
        self.control.app.push_screen(TrustModal(describe_untrusted(session.root, ignored, seen)), self._after_trust)
        return True

    def _after_trust(self, trusted: bool | None) -> None:
        from ctxagent.agent import decline, trust_repo
        from ctxagent.context import CtxagentError

        self.asking_trust = False
        control = self.control
        session = control.session
        root = session.root
        ignored = [i for i in session.config.ignored_keys if not i.user_only]  # trust does not apply the others
        try:
            if trusted:
                trust_repo(root, self._seen)  # the bytes the box showed; a later change is not trusted
                if self.reload_config is not None:
                    session.config = self.reload_config()
                control.notice(f"trusted {root}: its settings apply ({', '.join(i.key for i in ignored)})", "warning")
            else:
                decline(root, ignored, self._seen)
                control.notice("the repository's settings stay ignored: "
                               + ", ".join(i.key for i in ignored) + " (`ctxagent trust` allows them)")
        except CtxagentError as exc:  # an unwritable trust list: say so, keep the safe config
            control.say(str(exc), "error")
        control.show_session_facts()  # the permission mark may have changed
        self.build()

    # -- the agent --------------------------------------------------------------------------------
    def build(self) -> None:
        """Build the agent for the current session on a worker thread (imports, tokenizer, memory, git)."""
        self.waiting = True
        self.show_waiting()
        self.control.run_worker(partial(self._build, self.control.session), thread=True, group="agent",
                                name="build agent")

    def _build(self, session: Session) -> None:
        """The worker: `AgentReady` with the agent, or with why there is none."""
        import ctxagent.tui.app.widgets.reply  # noqa: F401 - the first reply's Markdown widget, imported here, off the UI thread
        from ctxagent.context import ConfigError

        try:
            agent = self.new_agent(session)
        except ConfigError as exc:
            self.control.post_message(AgentReady(session, None, str(exc)))
        except Exception as exc:  # a broken set-up says why on the set-up screen, not as a traceback
            self.control.post_message(AgentReady(session, None, f"{type(exc).__name__}: {exc}"))
        else:
            self.control.post_message(AgentReady(session, agent))

    def new_agent(self, session: Session) -> Agent:
        """An agent for `session` wired to the screen (call it on a worker thread: it is slow to build)."""
        return self.make_agent(session, on_event=self.bridge.on_event, approver=self.bridge.approve)

    def ready(self, message: AgentReady) -> None:
        """On the UI thread: show the agent and run the waiting message, or ask the app for set-up."""
        control = self.control
        if message.session is not control.session:
            return
        if message.agent is None:
            self.waiting = False
            control.set_activity("no model")
            control.post_message(SetupNeeded(message.problem))  # bubbles to the app, which owns the set-up screen
            return
        control.show_agent(message.agent)
        self.show_waiting()  # the SDK may still be loading: say so rather than "idle"
        if self.queued is not None:
            run, self.queued = self.queued, None
            control.run_turn(run)
