"""The session screen's agent: built on a worker thread after the first frame, and shown when ready.

A mixin of `SessionScreen` (tui/session_screen.py), split out so the screen keeps its input, turns
and session actions. After the first frame: the transcript, the trust question (when the
repository's config had keys ignored; agent/trust.py), then the agent — provider SDK, tokenizer,
memory, checkpoints — on a worker thread. `AgentReady` brings it back; a message typed before it
was ready runs then, and a configuration it cannot use opens the set-up screen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ctxagent.tui.chat import NoticeLine
from ctxagent.tui.messages import AgentReady, Outcome, SetupNeeded
from ctxagent.tui.modals import TrustModal
from ctxagent.tui.transcript import cost_usd, transcript_widgets, usage_totals

if TYPE_CHECKING:
    from ctxagent.agent.config import Config
    from ctxagent.agent.loop import Agent
    from ctxagent.agent.session import Session
    from ctxagent.tui.bridge import WorkerBridge
    from ctxagent.tui.chat_log import ChatLog
    from ctxagent.tui.gauge import UsageGauge
    from ctxagent.tui.modals import BreakpointBar
    from ctxagent.tui.session_screen import AgentFactory, TurnRunner
    from ctxagent.tui.status import StatusLine
    from textual.app import App
    from textual.reactive import Reactive


class AgentStartMixin:
    """The agent's life on the screen; every other name it uses on `self` is defined by
    `SessionScreen` (or Textual's `Screen`)."""

    session: Session
    agent: Agent | None
    make_agent: AgentFactory
    reload_config: Callable[[], Config] | None
    bridge: WorkerBridge
    label: str
    _queued: TurnRunner | None
    chat: ChatLog
    gauge: UsageGauge
    status: StatusLine
    bar: BreakpointBar
    app: App[Any]
    level: str
    say: Callable[..., None]
    run_worker: Callable[..., Any]
    post_message: Callable[..., bool]
    set_reactive: Callable[[Reactive[Any], Any], None]
    start_action: Callable[..., None]
    _advice: Callable[[float], str]
    _run_turn: Callable[[TurnRunner], None]

    def _after_first_frame(self) -> None:
        self._show_session_facts()
        self.chat.mount_all(transcript_widgets(self.session.log.events))
        if not self._ask_trust():
            self.build_agent()

    def _ask_trust(self) -> bool:
        """Ask once about a repository config whose security-relevant keys were ignored (agent/trust.py);
        the agent is built after the answer. False when there is nothing to ask."""
        from ctxagent.agent.trust import describe_ignored, needs_prompt

        ignored = self.session.config.ignored_keys
        if not ignored or not needs_prompt(self.session.root, ignored):
            return False
        self.app.push_screen(TrustModal(describe_ignored(ignored)), self._after_trust)
        return True

    def _after_trust(self, trusted: bool | None) -> None:
        from ctxagent.agent.trust import decline, trust
        from ctxagent.context.errors import CtxagentError

        root, ignored = self.session.root, list(self.session.config.ignored_keys)
        try:
            if trusted:
                trust(root)
                if self.reload_config is not None:
                    self.session.config = self.reload_config()
                self.chat.mount(NoticeLine(f"trusted {root}: its settings apply ({', '.join(i.key for i in ignored)})",
                                           "warning"))
            else:
                decline(root, ignored)
                self.chat.mount(NoticeLine("the repository's settings stay ignored: "
                                           + ", ".join(i.key for i in ignored) + " (`ctxagent trust` allows them)"))
        except CtxagentError as exc:  # an unwritable trust list: say so, keep the safe config
            self.say(str(exc), "error")
        self._show_session_facts()  # the permission mark may have changed
        self.build_agent()

    def _show_session_facts(self, *, priced: bool = True) -> None:
        cfg = self.session.config
        self.gauge.thresholds = (float(cfg.compress_at), float(cfg.new_session_at))
        totals = usage_totals(self.session.log.events)
        model = self.agent.model_label if self.agent is not None else (cfg.model or "?")
        self.status.set(label=self.label, model=model, session=str(self.session.id), permissions=cfg.permission_mode,
                        tokens_in=totals.input_tokens, tokens_out=totals.output_tokens)
        if priced:
            self.status.set(cost=cost_usd(model, totals))

    # -- the agent --------------------------------------------------------------------------------
    def build_agent(self) -> None:
        """Build the agent for the current session on a worker thread (imports, tokenizer, memory, git)."""
        session = self.session
        self.status.set(activity="starting")

        def job() -> None:
            import ctxagent.tui.reply  # noqa: F401 - the first reply's Markdown widget, imported here, off the UI thread
            from ctxagent.context.errors import ConfigError

            try:
                agent = self.new_agent(session)
            except ConfigError as exc:
                self.post_message(AgentReady(session, None, str(exc)))
            except Exception as exc:  # a broken set-up says why on the set-up screen, not as a traceback
                self.post_message(AgentReady(session, None, f"{type(exc).__name__}: {exc}"))
            else:
                self.post_message(AgentReady(session, agent))

        self.run_worker(job, thread=True, group="agent", name="build agent")

    def new_agent(self, session: Session) -> Agent:
        """An agent for `session` wired to this screen (call it on a worker thread: it is slow to build)."""
        return self.make_agent(session, on_event=self.bridge.on_event, approver=self.bridge.approve)

    def on_agent_ready(self, message: AgentReady) -> None:
        if message.session is not self.session:
            return
        if message.agent is None:
            self.status.set(activity="no model")
            self.post_message(SetupNeeded(message.problem))  # bubbles to the app, which owns the set-up screen
            return
        self.show_agent(message.agent)
        if self._queued is not None:
            run, self._queued = self._queued, None
            self._run_turn(run)

    def show_agent(self, agent: Agent) -> None:
        """Make `agent` current: gauge and status from its reports; a fresh measure after a rewind."""
        self.agent = agent
        self.gauge.reset()
        self.gauge.history = [float(r.usage_pct) for r in agent.reports[:-1]]
        last = agent.last_report
        if last is not None:
            self.gauge.update_report(last)
        self.set_reactive(type(self).level, self._advice(last.usage_pct) if last is not None else "ok")
        self.bar.hide()
        self._show_session_facts()
        self.status.set(model=agent.model_label, calibration=agent.calibration_ratio, activity="idle")
        events = self.session.log.events
        if events and events[-1].kind in ("rewind", "compaction"):
            self.measure_next()  # the last report predates it: show what the next step will send

    def measure_next(self) -> None:
        agent = self.agent
        if agent is not None:
            self.start_action("measure", lambda: (agent.preview(), Outcome(True))[1], activity="measuring")
