"""The session screen: chat, breakpoint bar, input, usage gauge and status line for one session.

It owns the session and its agent, and is the `SessionControl` (tui/app/control.py) that the slash
commands, the worker bridge and the agent's start work through. The agent is built on a worker
thread after the first frame (`AgentStarter`, tui/app/agent_start.py; the prompt takes keys at once, a
message sent before the agent is ready waits for it). A turn, and every session action that may
call the model or touch files (compact, rewind, new session, resume, model switch), runs on a
worker thread while `busy` is set; agent events come back as `AgentUpdate` messages, actions end
with `ActionFinished`. `level` is the engine's advice for the latest build (`advice_for` at the
session's thresholds) — the gauge colours by the same rule, and crossing a level raises the bar
(compress) or the modal (new session).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ctxagent.agent import (
    AssistantDone,
    ContextBuilt,
    HandoffDrafted,
    McpStatus,
    ModelWaiting,
    Notice,
    StepStarted,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from ctxagent.context import advice_for, plural, usage_text
from ctxagent.tui.app.agent_start import AgentStarter, SdkWarming
from ctxagent.tui.app.bridge import WorkerBridge
from ctxagent.tui.app.messages import ActionFinished, AgentReady, AgentUpdate, AskUser, Outcome
from ctxagent.tui.app.safe import flat
from ctxagent.tui.app.screens.modals import BreakpointBar, BreakpointModal
from ctxagent.tui.app.widgets.chat import NoticeLine, UserMessage
from ctxagent.tui.app.widgets.chat_log import ChatLog
from ctxagent.tui.app.widgets.gauge import UsageGauge
from ctxagent.tui.app.widgets.prompt import ChatInput
from ctxagent.tui.app.widgets.status import StatusLine
from ctxagent.tui.app.widgets.transcript import cost_usd, session_cost, transcript_widgets
from textual import events, getters, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.screen import Screen

if TYPE_CHECKING:
    from ctxagent.agent import Agent, Config, Session
    from ctxagent.tui.app.control import AgentFactory, SessionOpener, TurnRunner

RANK = {"ok": 0, "compress": 1, "new_session": 2}


class SessionScreen(Screen[None]):
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
        # Ctrl+G, not Ctrl+L: that is clear-screen by convention (and Esc also says later when no turn runs).
        Binding("ctrl+g", "breakpoint('later')", "Later", show=False),
        Binding("shift+tab", "cycle_mode", "Permission mode", show=False, priority=True),  # tui/app/screens/plan.py
    ]

    busy: reactive[bool] = reactive(False, init=False)  # a turn or a session action is running
    level: reactive[str] = reactive("ok")  # the engine's advice for the latest build

    chat = getters.query_one("#chat", ChatLog)
    input = getters.query_one("#input", ChatInput)
    gauge = getters.query_one("#gauge", UsageGauge)
    status = getters.query_one("#status", StatusLine)
    bar = getters.query_one("#breakpoint", BreakpointBar)

    def __init__(self, session: Session, make_agent: AgentFactory, *, label: str = "", initial_input: str = "",
                 open_session: SessionOpener | None = None,
                 reload_config: Callable[[], Config] | None = None) -> None:
        super().__init__()
        self.session = session
        self.open_session = open_session
        self.label = label
        self.initial_input = initial_input
        self.agent: Agent | None = None
        self.cancel = threading.Event()
        self.stopping = False  # the app is closing: workers must not wait for the UI
        self.turn_ended_at = 0.0
        self.bridge = WorkerBridge(self)
        self.starter = AgentStarter(self, self.bridge, make_agent, reload_config)
        self._pending: list[Callable[[], None]] = []  # run when the running turn or action ends

    # -- layout ---------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield ChatLog(id="chat")
        yield BreakpointBar(id="breakpoint")
        yield ChatInput(id="input", files=self._repo_files)
        yield UsageGauge(id="gauge")
        yield StatusLine(id="status", activity="starting")  # not "idle": the agent is built after the first frame

    def _repo_files(self) -> list[str]:
        from ctxagent.agent import list_repo_files

        return list_repo_files(self.session.root)[0]

    def on_mount(self) -> None:
        self.show_session_facts(priced=False)  # the price table is read after the first frame
        self.status.set(activity="starting")
        self.offer_input(self.initial_input)
        self.input.focus()
        self.call_after_refresh(self._after_first_frame)

    def _after_first_frame(self) -> None:
        self.show_session_facts()
        self.chat.mount_all(transcript_widgets(self.session.log.events))
        self.chat.mount_all([NoticeLine(line, "warning") for line in self.session.notices])  # a resume's
        from ctxagent.tui.app.slash import refresh_custom_commands

        refresh_custom_commands(self)  # the session's templates: completion and /help list them
        self.starter.start()

    def offer_input(self, text: str) -> None:
        """Type a suggested request into an empty input (the demo's), saying so."""
        if text and not self.input.text:
            self.input.value = text
            self.chat.mount(NoticeLine("A request is typed in for you — press Enter to send it, or write your own."))

    def on_key(self, event: events.Key) -> None:
        """A key the input did not take goes to it, not nowhere (tui/app/widgets/prompt.py `ChatInput.take_ahead`)."""
        self.input.take_ahead(event, focused_elsewhere=self.focused not in (None, self.input))

    # -- input ----------------------------------------------------------------------------------
    def on_chat_input_submitted(self, event: ChatInput.Submitted) -> None:
        """Enter: what the line means is tui/app/slash.py's `run_input`; the box keeps text it did not take."""
        from ctxagent.tui.app.slash import run_input

        event.stop()
        if run_input(self, event.text):
            event.chat_input.remember(event.text)
            event.chat_input.clear()

    def start_turn(self, shown: str, run: TurnRunner) -> bool:
        """Show the user's input and run the turn on a worker thread. Before the agent is ready the first
        input waits for it; False (the input box keeps the text) while another turn runs."""
        if self.busy or (self.agent is None and self.starter.queued is not None):
            self.say("A turn is running — wait for it, or press Esc to interrupt." if self.busy
                     else "The model is still starting; your first message is already waiting.", "warning")
            return False
        self.chat.mount(UserMessage(shown, self._next_turn()))
        if self.agent is None:
            self.starter.queued = run
            self.chat.mount(NoticeLine("the model is starting — your message is sent as soon as it is ready"))
            return True
        self.run_turn(run)
        return True

    def run_turn(self, run: TurnRunner) -> None:
        agent = self.agent
        assert agent is not None
        self.busy = True
        self.cancel = cancel = threading.Event()
        self.status.set(activity="thinking")
        self._turn(run, agent, cancel)

    @work(thread=True, group="agent", name="turn", description="a turn")  # no repr of the agent
    def _turn(self, run: TurnRunner, agent: Agent, cancel: threading.Event) -> None:
        try:
            run(agent, cancel)
        except Exception as exc:  # the loop reports its own errors; this is a bug guard, not flow
            self.post_message(AgentUpdate(Notice(f"{type(exc).__name__}: {exc}", "error")))
            self.post_message(AgentUpdate(TurnFinished(self._next_turn(), "error", "", 0)))

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

    def quit(self) -> None:
        self.stopping = True
        self.cancel.set()
        self.app.exit(0)

    # -- telling the user -------------------------------------------------------------------------
    def say(self, message: str, severity: SeverityLevel = "information") -> None:
        """A toast. Never markup: messages often quote text from outside (paths, errors)."""
        self.app.notify(flat(message), severity=severity, markup=False)

    def notice(self, text: str, severity: str = "info") -> None:
        self.chat.mount(NoticeLine(text, severity))

    def set_activity(self, activity: str) -> None:
        self.status.set(activity=activity)

    def clear_chat(self) -> None:
        self.chat.remove_children()

    @property
    def model_label(self) -> str:
        return self.status.info.model

    def show_session_facts(self, *, priced: bool = True) -> None:
        cfg = self.session.config
        self.gauge.thresholds = (float(cfg.compress_at), float(cfg.new_session_at))
        model = self.agent.model_label if self.agent is not None else (cfg.model or "?")
        spent = session_cost(self.session.log.events, model)  # each call priced with its own model
        totals = spent.usage
        self.status.set(label=self.label, model=model, session=str(self.session.id), permissions=cfg.permission_mode,
                        tokens_in=totals.input_tokens, tokens_out=totals.output_tokens)
        if priced:
            self.status.set(cost=spent.total)

    # -- the agent --------------------------------------------------------------------------------
    def new_agent(self, session: Session) -> Agent:
        """An agent for `session` wired to this screen (call it on a worker thread: it is slow to build)."""
        return self.starter.new_agent(session)

    def on_agent_ready(self, message: AgentReady) -> None:
        self.starter.ready(message)

    def on_sdk_warming(self, message: SdkWarming) -> None:
        self.starter.warming_changed(message)

    def show_agent(self, agent: Agent) -> None:
        """Make `agent` current: gauge and status from its reports; a fresh measure after a rewind."""
        self.agent = agent
        self.gauge.reset()
        self.gauge.history = [float(r.usage_pct) for r in agent.reports[:-1]]
        last = agent.last_report
        if last is not None:
            self.gauge.update_report(last)
        self.set_reactive(SessionScreen.level, self._advice(last.usage_pct) if last is not None else "ok")
        self.bar.hide()
        self.show_session_facts()
        self.status.set(model=agent.model_label, calibration=agent.calibration_ratio, activity="idle")
        events = self.session.log.events
        if events and events[-1].kind in ("rewind", "code_rewind", "compaction"):
            self.measure_next()  # the last report predates it: show what the next step will send

    def measure_next(self) -> None:
        agent = self.agent
        if agent is not None:
            self.start_action("measure", lambda: (agent.preview(), Outcome(True))[1], activity="measuring")

    def confirm_overwrite(self, paths: list[str]) -> bool:
        return self.bridge.confirm_overwrite(paths)

    def on_ask_user(self, message: AskUser) -> None:
        """A worker's question (tui/app/bridge.py): shown, unless closing (the worker then gives up by itself)."""
        if not self.stopping:
            self.app.push_screen(message.modal, message.done)

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
                self.status.add_usage(ev.usage.input_tokens, ev.usage.output_tokens,
                                      cost_usd(model, ev.usage, self.session.config.cache_ttl))
            case ModelWaiting():
                self.status.show_waiting(ev.step, ev.seconds)
            case ToolStarted():
                self.status.set(activity=f"tool: {ev.name}")
            case McpStatus():
                self._mcp_state(ev)
            case TurnFinished():
                self._turn_finished(ev)
            case HandoffDrafted():
                from ctxagent.tui.app.screens.handoff import edit_handoff  # not needed for the first frame

                edit_handoff(self, ev)
        await self.chat.show(ev)

    def _mcp_state(self, ev: McpStatus) -> None:
        """The status bar's MCP item; a server that failed or crashed also gets a line (/mcp has the rest)."""
        states = getattr(self, "_mcp_states", {})
        states[ev.server] = ev.state
        self._mcp_states = states
        ready = sum(1 for s in states.values() if s == "ready")
        bad = [n for n, s in states.items() if s in ("failed", "crashed")]
        self.status.set(mcp=f"MCP {ready}/{len(states)}" + (f" ✗ {', '.join(bad)}" if bad else ""))
        if ev.state in ("failed", "crashed"):
            self.chat.mount(NoticeLine(f"MCP server {ev.server} {ev.state}: {ev.error} — its tools answer with an "
                                       "error; /mcp shows the servers", "warning"))

    def _turn_finished(self, ev: TurnFinished) -> None:
        self.turn_ended_at = time.monotonic()  # the app's second Ctrl+C after an interrupt counts from here
        self.busy = False
        self.chat.end_reply()
        if ev.stop_reason == "cancelled":
            self.chat.mount(NoticeLine(f"turn {ev.turn} interrupted after {plural(ev.steps, 'step')}; the log is consistent",
                                       "warning"))
        elif ev.stop_reason == "max_steps":
            self.chat.mount(NoticeLine(f"turn {ev.turn} stopped at the step limit", "warning"))
        from ctxagent.tui.app.screens.plan import after_turn

        after_turn(self, ev)  # an /init draft's box, or in plan mode the plan box
        self._run_pending()

    def action_cycle_mode(self) -> None:
        from ctxagent.tui.app.screens.plan import cycle_mode

        cycle_mode(self)

    def watch_busy(self, busy: bool) -> None:
        if not busy:  # idle only with an agent: before it is built the status still says it is starting
            self.status.set(activity="idle" if self.agent is not None else "starting")

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
            self.chat.mount(NoticeLine(f"context at {usage_text(pct)} — auto_compact is on: compacting when this turn ends"))
        else:
            self.bar.show(pct)

    def _after_full_prompt(self, choice: str | None) -> None:
        from ctxagent.tui.app.slash import breakpoint_chosen

        breakpoint_chosen(self, choice)

    def on_breakpoint_bar_chosen(self, message: BreakpointBar.Chosen) -> None:
        from ctxagent.tui.app.slash import breakpoint_chosen

        breakpoint_chosen(self, message.choice)

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
        self._action(name, work)

    @work(thread=True, group="agent", name="action", description="a session action")
    def _action(self, name: str, job: Callable[[], Outcome]) -> None:
        try:
            outcome = job()
        except Exception as exc:  # an action that fails says so in the chat; the session goes on
            outcome = Outcome(False, f"{name} failed: {type(exc).__name__}: {exc}")
        self.post_message(ActionFinished(name, outcome))

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
        self.chat.mount_all([NoticeLine(line, "warning") for line in self.session.notices])  # a resume's
        self.show_agent(agent)
        if old is not session:
            old.log.close()

