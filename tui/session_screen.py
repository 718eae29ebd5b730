"""The session screen: chat, breakpoint bar, input, usage gauge and status line for one session.

It owns the session and its agent. The agent is built on a worker thread after the first frame
(tui/agent_start.py; the prompt takes keys at once, a message sent before the agent is ready waits
for it). A turn, and
every session action that may call the model or touch files (compact, rewind, new session, resume,
model switch), runs on a worker thread while `busy` is set; agent events come back as `AgentUpdate`
messages, actions end with `ActionFinished`. `level` is the engine's advice for the latest build
(`context.monitor.advice_for` at the session's thresholds) — the gauge colours by the same rule, and
crossing a level raises the bar (compress) or the modal (new session).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ctxagent.agent.updates import (
    AssistantDone,
    ContextBuilt,
    Notice,
    StepStarted,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from ctxagent.context.floor.display import plural
from ctxagent.context.monitor import advice_for
from ctxagent.tui.agent_start import AgentStartMixin
from ctxagent.tui.bridge import WorkerBridge
from ctxagent.tui.chat import NoticeLine, UserMessage
from ctxagent.tui.chat_log import ChatLog
from ctxagent.tui.gauge import UsageGauge
from ctxagent.tui.messages import (
    ActionFinished,
    AgentUpdate,
    Outcome,
)
from ctxagent.tui.modals import BreakpointBar, BreakpointModal
from ctxagent.tui.prompt import ChatInput
from ctxagent.tui.status import StatusLine
from ctxagent.tui.transcript import cost_usd, transcript_widgets
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.screen import Screen

if TYPE_CHECKING:
    from ctxagent.agent.config import Config
    from ctxagent.agent.loop import Agent
    from ctxagent.agent.session import Session

AgentFactory = Callable[..., "Agent"]  # (session, on_event=, approver=) -> Agent
TurnRunner = Callable[["Agent", threading.Event], Any]  # runs one turn on the worker thread
RANK = {"ok": 0, "compress": 1, "new_session": 2}


class SessionScreen(AgentStartMixin, Screen[None]):
    DEFAULT_CSS = """
    SessionScreen { layout: vertical; }
    SessionScreen #chat { height: 1fr; }
    SessionScreen #gauge { height: 2; padding: 0 1; }
    SessionScreen #gauge.-compress { background: $warning 10%; }
    SessionScreen #gauge.-new_session { background: $error 20%; }
    SessionScreen #status { height: 1; padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape", "interrupt", "Interrupt", show=True),
        # Not priority: keys the focused input uses (Ctrl+K deletes to the end of the line) stay its own.
        Binding("ctrl+o", "breakpoint('compact')", "Compact now", show=False),
        Binding("ctrl+l", "breakpoint('later')", "Later", show=False),
    ]

    busy: reactive[bool] = reactive(False)  # a turn or a session action is running
    level: reactive[str] = reactive("ok")  # the engine's advice for the latest build

    def __init__(self, session: Session, make_agent: AgentFactory, *, label: str = "", initial_input: str = "",
                 open_session: Callable[..., Session] | None = None,
                 reload_config: Callable[[], Config] | None = None) -> None:
        super().__init__()
        self.session = session
        self.make_agent = make_agent
        self.open_session = open_session
        self.reload_config = reload_config  # the config again, from the same sources (after trusting the repository)
        self.label = label
        self.initial_input = initial_input
        self.agent: Agent | None = None
        self.cancel = threading.Event()
        self.stopping = False  # the app is closing: workers must not wait for the UI
        self.turn_ended_at = 0.0
        self.bridge = WorkerBridge(self)
        self._pending: list[Callable[[], None]] = []  # run when the running turn or action ends
        self._queued: TurnRunner | None = None  # sent before the agent was ready: runs when it is

    # -- layout ---------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield ChatLog(id="chat")
        yield BreakpointBar(id="breakpoint")
        yield ChatInput(id="input", files=self._repo_files)
        yield UsageGauge(id="gauge")
        yield StatusLine(id="status")

    @property
    def chat(self) -> ChatLog:
        return self.query_one("#chat", ChatLog)

    @property
    def input(self) -> ChatInput:
        return self.query_one("#input", ChatInput)

    @property
    def gauge(self) -> UsageGauge:
        return self.query_one("#gauge", UsageGauge)

    @property
    def status(self) -> StatusLine:
        return self.query_one("#status", StatusLine)

    @property
    def bar(self) -> BreakpointBar:
        return self.query_one("#breakpoint", BreakpointBar)

    def _repo_files(self) -> list[str]:
        from ctxagent.tools.confine import list_repo_files

        return list_repo_files(self.session.root)[0]

    def on_mount(self) -> None:
        self._show_session_facts(priced=False)  # the price table is read after the first frame
        self.status.set(activity="starting")
        self.offer_input(self.initial_input)
        self.input.focus()
        self.call_after_refresh(self._after_first_frame)

    def offer_input(self, text: str) -> None:
        """Type a suggested request into an empty input (the demo's), saying so."""
        if text and not self.input.text:
            self.input.value = text
            self.chat.mount(NoticeLine("A request is typed in for you — press Enter to send it, or write your own."))

    def on_key(self, event: events.Key) -> None:
        """Text typed while the input did not take it goes into it, not nowhere: type-ahead at start-up
        (keys that arrived before the input had focus), or typing while a tool panel has focus."""
        if event.is_printable and event.character:
            event.stop()
            box = self.input
            box.focus()
            box.insert(event.character)

    # -- input ----------------------------------------------------------------------------------
    def on_chat_input_submitted(self, event: ChatInput.Submitted) -> None:
        """Enter: a slash command, `!command`, or a message for the model (`//text`: text with a slash)."""
        from ctxagent.tui.commands import parse_slash, unescape
        from ctxagent.tui.slash import run_slash

        event.stop()
        text, stripped = event.text, event.text.lstrip()
        if not stripped:
            return
        if parse_slash(text) is not None:
            run_slash(self, text)
            accepted = True
        elif stripped.startswith("!") and not stripped.startswith("!!"):
            command = stripped[1:].strip()
            accepted = bool(command) and self.start_turn(f"!{command}", lambda agent, cancel: agent.run_command(command, cancel))
            if not command:
                self.say("usage: !COMMAND — e.g. !git status", "warning")
        else:
            message = unescape(text)
            accepted = self.start_turn(message, lambda agent, cancel: agent.run_turn(message, cancel))
        if accepted:
            event.chat_input.remember(text)
            event.chat_input.clear()

    def start_turn(self, shown: str, run: TurnRunner) -> bool:
        """Show the user's input and run the turn on a worker thread. Before the agent is ready the first
        input waits for it; False (the input box keeps the text) while another turn runs."""
        if self.busy or (self.agent is None and self._queued is not None):
            self.say("A turn is running — wait for it, or press Esc to interrupt." if self.busy
                     else "The model is still starting; your first message is already waiting.", "warning")
            return False
        self.chat.mount(UserMessage(shown, self._next_turn()))
        if self.agent is None:
            self._queued = run
            self.chat.mount(NoticeLine("the model is starting — your message is sent as soon as it is ready"))
            return True
        self._run_turn(run)
        return True

    def _run_turn(self, run: TurnRunner) -> None:
        agent = self.agent
        assert agent is not None
        self.busy = True
        self.cancel = cancel = threading.Event()
        self.status.set(activity="thinking")

        def job() -> None:
            try:
                run(agent, cancel)
            except Exception as exc:  # the loop reports its own errors; this is a bug guard, not flow
                self.post_message(AgentUpdate(Notice(f"{type(exc).__name__}: {exc}", "error")))
                self.post_message(AgentUpdate(TurnFinished(self._next_turn(), "error", "", 0)))

        self.run_worker(job, thread=True, group="agent", name="turn")

    def _next_turn(self) -> int:
        return int(self.session.log.turn) + 1

    def action_interrupt(self) -> None:
        if self.busy and not self.cancel.is_set():
            self.interrupt()
        elif self.bar.shown:
            self.bar.choose("later")

    def interrupt(self) -> None:
        self.cancel.set()
        self.status.set(activity="interrupting…")
        self.chat.mount(NoticeLine("interrupting — the turn stops at the next safe point", "warning"))

    def ctrl_c(self) -> str:
        """Ctrl+C: interrupt the running turn, else clear the input. Returns what it did:
        "interrupted", "cleared", or "" (nothing to do: the app's second press quits)."""
        if self.busy and not self.cancel.is_set():
            self.interrupt()
            return "interrupted"
        if self.input.text:
            self.input.clear()
            return "cleared"
        return ""

    def say(self, message: str, severity: SeverityLevel = "information") -> None:
        """A toast. Never markup: messages often quote text from outside (paths, errors)."""
        self.app.notify(message, severity=severity, markup=False)

    # -- agent events ---------------------------------------------------------------------------
    async def on_agent_update(self, message: AgentUpdate) -> None:
        ev = message.event
        match ev:
            case TurnStarted():
                self.status.set(activity=f"turn {ev.turn}")
            case StepStarted():
                self.chat.end_reply()
                self.status.set(activity=f"step {ev.step}")
            case ContextBuilt():
                self.gauge.update_report(ev.report)
                self.status.set(calibration=float(ev.report.calibration_ratio))
                self.level = self._advice(ev.report.usage_pct)
                if self.bar.shown:  # the same level, a new figure: the bar says what the gauge shows
                    self.bar.show(float(ev.report.usage_pct))
            case AssistantDone():
                model = self.status.info.model
                self.status.add_usage(int(ev.usage.get("input_tokens", 0)), int(ev.usage.get("output_tokens", 0)),
                                      cost_usd(model, ev.usage))
            case ToolStarted():
                self.status.set(activity=f"tool: {ev.name}")
            case TurnFinished():
                self._turn_finished(ev)
        await self.chat.show(ev)

    def _turn_finished(self, ev: TurnFinished) -> None:
        self.turn_ended_at = time.monotonic()  # the app's second Ctrl+C after an interrupt counts from here
        self.busy = False
        self.chat.end_reply()
        if ev.stop_reason == "cancelled":
            self.chat.mount(NoticeLine(f"turn {ev.turn} interrupted after {plural(ev.steps, 'step')}; the log is consistent",
                                       "warning"))
        elif ev.stop_reason == "max_steps":
            self.chat.mount(NoticeLine(f"turn {ev.turn} stopped at the step limit", "warning"))
        self._run_pending()

    def watch_busy(self, busy: bool) -> None:
        if not busy:
            self.status.set(activity="idle")

    # -- breakpoints ----------------------------------------------------------------------------
    def _advice(self, usage_pct: float) -> str:
        cfg = self.session.config
        return advice_for(usage_pct, (float(cfg.compress_at), float(cfg.new_session_at)))

    def watch_level(self, old: str, new: str) -> None:
        pct = float(self.gauge.report.usage_pct) if self.gauge.report is not None else 0.0
        if new == "ok":
            self.bar.hide()
        if RANK[new] <= RANK[old]:
            return
        if new == "new_session":
            self.bar.hide()
            if not isinstance(self.app.screen, BreakpointModal):
                self.app.push_screen(BreakpointModal(pct), self._after_full_prompt)
        elif self.session.config.auto_compact:
            self.chat.mount(NoticeLine(f"context at {pct:.0f}% — auto_compact is on: compacting when this turn ends"))
        else:
            self.bar.show(pct)

    def _after_full_prompt(self, choice: str | None) -> None:
        from ctxagent.tui import slash

        if choice == "compact":
            slash.compact(self, "")
        elif choice == "new_session":
            slash.new_session(self, with_summary=True)

    def on_breakpoint_bar_chosen(self, message: BreakpointBar.Chosen) -> None:
        from ctxagent.tui import slash

        if message.choice == "compact":
            slash.compact(self, "")

    def action_breakpoint(self, choice: str) -> None:
        self.bar.choose(choice)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "breakpoint":  # the bar's keys exist only while it is shown
            return self.is_mounted and self.bar.shown
        return True

    # -- session actions ------------------------------------------------------------------------
    def start_action(self, name: str, work: Callable[[], Outcome], *, activity: str = "") -> None:
        """Run `work` on a worker thread with the screen busy; its Outcome comes back as ActionFinished.
        While a turn runs, the action waits for it (the agent runs one thing at a time)."""
        if self.busy:
            self._pending.append(lambda: self.start_action(name, work, activity=activity))
            if name != "measure":
                self.say(f"{name} will run when the running turn ends")
            return
        self.busy = True
        self.status.set(activity=activity or name)

        def job() -> None:
            try:
                outcome = work()
            except Exception as exc:  # an action that fails says so in the chat; the session goes on
                outcome = Outcome(False, f"{name} failed: {type(exc).__name__}: {exc}")
            self.post_message(ActionFinished(name, outcome))

        self.run_worker(job, thread=True, group="agent", name=name)

    def on_action_finished(self, message: ActionFinished) -> None:
        out = message.outcome
        self.busy = False
        if out.session is not None and out.agent is not None:
            self.switch_session(out.session, out.agent)
        elif out.agent is not None:
            self.show_agent(out.agent)
        elif out.rerender:
            self.rerender()
        if out.detail:
            self.chat.mount(NoticeLine(out.detail, "info" if out.ok else "error"))
        if out.restore_input:
            self.input.value = out.restore_input
        if out.then is not None:
            out.then()
        self._run_pending()

    def _run_pending(self) -> None:
        pending, self._pending = self._pending, []
        for run in pending:
            run()

    def rerender(self) -> None:
        """The conversation changed under the chat (a rewind): render it again from the log."""
        self.chat.remove_children()
        self.chat.mount_all(transcript_widgets(self.session.log.events))
        self.bar.hide()
        if self.agent is not None:
            self.show_agent(self.agent)

    def switch_session(self, session: Session, agent: Agent) -> None:
        old = self.session
        self.session = session
        self.chat.remove_children()
        self.chat.mount_all(transcript_widgets(session.log.events))
        self.show_agent(agent)
        if old is not session:
            old.log.close()

