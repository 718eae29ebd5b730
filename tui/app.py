"""The ctxagent Textual app: chat, usage gauge, status line, breakpoint and permission prompts.

The agent turn runs in a thread worker (`@work(thread=True, exclusive=True)`); its events reach the
UI as typed messages (tui/messages.py) through the thread-safe `post_message`, and permission
requests block only the worker while a modal asks the user. Slash-command handlers live in
tui/slash.py (a mixin), so this file is the layout and the event flow.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ctxagent.agent.events import AgentEvent, PermissionDecision, PermissionRequest
from ctxagent.agent.loop import Agent
from ctxagent.context.report import ContextReport
from ctxagent.tui.chat import AssistantMessage, ChatLog, NoticeLine, ToolPanel, UserMessage
from ctxagent.tui.commands import COMMANDS, parse_slash, unescape
from ctxagent.tui.gauge import UsageGauge
from ctxagent.tui.messages import (
    Compacted,
    ContextMeasured,
    NoticePosted,
    ReplyDone,
    StepBegan,
    TextStreamed,
    ToolBegan,
    ToolEnded,
    TurnBegan,
    TurnEnded,
    to_message,
)
from ctxagent.tui.modals import BreakpointBar, BreakpointModal, PermissionModal
from ctxagent.tui.prompt import ChatInput
from ctxagent.tui.setup_screen import LocalServer, SetupScreen
from ctxagent.tui.slash import SlashCommandsMixin
from ctxagent.tui.status import StatusLine
from ctxagent.tui.transcript import cost_usd, transcript_widgets, usage_totals
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

AgentFactory = Callable[..., Any]  # (session, on_event=, approver=) -> Agent
_RANK = {"ok": 0, "compress": 1, "full": 2}
_ADVICE_LEVEL = {"ok": "ok", "compress": "compress", "new_session": "full"}


class CtxApp(SlashCommandsMixin, App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "ctxagent"
    BINDINGS = [
        Binding("escape", "interrupt", "Interrupt", show=True),
        Binding("ctrl+k", "breakpoint('compact')", "Compact now", show=False, priority=True),
        Binding("ctrl+l", "breakpoint('later')", "Later", show=False, priority=True),
        Binding("ctrl+q", "quit", "Quit", show=True, priority=True),
    ]

    def __init__(
        self,
        session: Any = None,
        make_agent: AgentFactory | None = None,
        *,
        label: str = "",
        setup_problem: str = "",
        local_server: LocalServer | None = None,
        open_session_fn: Callable[..., Any] | None = None,
        initial_input: str = "",
    ) -> None:
        super().__init__()
        self.session = session
        self.make_agent = make_agent
        self.label = label
        self.setup_problem = setup_problem
        self.local_server = local_server
        self.open_session_fn = open_session_fn
        self.initial_input = initial_input
        self.agent: Agent | None = None
        self.cancel = threading.Event()
        self.busy = False
        self._level = "ok"
        self._assistant: AssistantMessage | None = None
        self._pending: list[tuple[str, str | None]] = []  # actions deferred until the turn ends
        self._stopping = False

    # -- layout ---------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield ChatLog(id="chat")
        yield BreakpointBar(id="breakpoint")
        yield ChatInput(id="input")
        yield UsageGauge(id="gauge")
        yield StatusLine(id="status")

    @property
    def chat(self) -> ChatLog:
        return self.query_one("#chat", ChatLog)

    @property
    def gauge(self) -> UsageGauge:
        return self.query_one("#gauge", UsageGauge)

    @property
    def status(self) -> StatusLine:
        return self.query_one("#status", StatusLine)

    @property
    def bar(self) -> BreakpointBar:
        return self.query_one("#breakpoint", BreakpointBar)

    def on_mount(self) -> None:
        self.status.set(label=self.label)
        if self.session is None or self.make_agent is None or self.setup_problem:
            self.push_screen(SetupScreen(self.setup_problem, self.local_server), self._after_setup)
            return
        self.attach(self.session)
        self._focus_input()

    def _focus_input(self) -> None:
        box = self.query_one("#input", ChatInput)
        if self.initial_input and not box.value:
            box.value = self.initial_input
            box.cursor_position = len(self.initial_input)
            self.chat.mount(NoticeLine("A request is typed in for you — press Enter to send it, or write your own."))
        box.focus()

    def _after_setup(self, choice: tuple[str, str] | None) -> None:
        if choice is None or self.session is None or self.make_agent is None:
            self.exit(2)
            return
        model, base_url = choice
        self.session.config.model = model
        self.session.config.base_url = base_url
        self.setup_problem = ""
        try:
            self.attach(self.session)
        except Exception as exc:  # still not usable: say why, on the setup screen again
            self.push_screen(SetupScreen(str(exc), self.local_server), self._after_setup)
            return
        self._focus_input()

    def attach(self, session: Any) -> None:
        """Make `session` current: a fresh agent, its history rendered, gauge and status restored."""
        assert self.make_agent is not None
        self.session = session
        self.agent = self.make_agent(session, on_event=self.on_agent_event, approver=self.approve)
        self.chat.remove_children()
        self.chat.mount_all(transcript_widgets(session.log.events))
        self.gauge.reset()
        reports: list[ContextReport] = list(self.agent.reports)
        if reports:
            self.gauge.history = [float(r.usage_pct) for r in reports[:-1]]
            self.gauge.update_report(reports[-1])
            self._level = self._level_of(reports[-1])
        else:
            self._level = "ok"
        self.bar.hide()
        if session.log.events and session.log.events[-1].kind in ("rewind", "compaction"):
            self._preview_worker()  # the last report predates the rewind: measure what the next step will send
        totals = usage_totals(session.log.events)
        label = self.agent.model_label
        self.status.set(
            model=label, session=str(session.id), tokens_in=totals.input_tokens, tokens_out=totals.output_tokens,
            cost=cost_usd(label, totals), activity="idle",
            calibration=self.agent.calibration_ratio,
        )

    @work(thread=True, exclusive=True, group="preview")
    def _preview_worker(self) -> None:
        if self.agent is not None:
            self.agent.preview()  # emits ContextBuilt, which updates the gauge like any step

    def get_system_commands(self, screen: Screen) -> Any:
        yield from super().get_system_commands(screen)
        for cmd in COMMANDS:
            yield SystemCommand(f"/{cmd.name}", cmd.help, lambda c=cmd: self.run_slash(f"/{c.name}"))

    # -- input ----------------------------------------------------------------------------------
    def on_input_submitted(self, event: ChatInput.Submitted) -> None:
        if not isinstance(event.input, ChatInput):
            return
        text = event.value
        event.input.value = ""
        if not text.strip():
            return
        event.input.remember(text)
        if parse_slash(text) is not None:
            self.run_slash(text)
            return
        self.send(unescape(text))

    def send(self, text: str) -> None:
        if self.agent is None:
            self.notify("No model is configured yet.", severity="error")
            return
        if self.busy:
            self.notify("A turn is running — wait for it or press Esc to interrupt.", severity="warning")
            return
        self.busy = True
        self.cancel = threading.Event()
        self.chat.mount(UserMessage(text, self._next_turn()))
        self.status.set(activity="thinking")
        self._turn_worker(text)

    def _next_turn(self) -> int:
        return int(self.session.log.turn) + 1 if self.session is not None else 1

    @work(thread=True, exclusive=True, group="agent")
    def _turn_worker(self, text: str) -> None:
        try:
            self.agent.run_turn(text, self.cancel)
        except Exception as exc:  # the loop reports its own errors; this is a bug guard, not flow
            self.post_message(NoticePosted(_notice(f"{type(exc).__name__}: {exc}", "error")))
            self.post_message(TurnEnded(_turn_finished(self._next_turn(), "error")))

    def on_agent_event(self, ev: AgentEvent) -> None:
        """Called on the worker thread by the agent: hop to the UI thread as a typed message."""
        if not self._stopping:
            self.post_message(to_message(ev))

    def approve(self, request: PermissionRequest) -> PermissionDecision:
        """Called on the worker thread: show the modal, block this thread (never the UI) for the answer."""
        answered = threading.Event()
        box: list[PermissionDecision] = []

        def done(decision: PermissionDecision | None) -> None:
            box.append(decision or PermissionDecision(allow=False, reason="no answer"))
            answered.set()

        self.call_from_thread(self.push_screen, PermissionModal(request), done)
        while not answered.wait(0.1):
            if self._stopping:
                return PermissionDecision(allow=False, reason="ctxagent is closing")
        return box[0]

    def action_interrupt(self) -> None:
        if self.busy and not self.cancel.is_set():
            self.cancel.set()
            self.status.set(activity="interrupting…")
            self.chat.mount(NoticeLine("interrupting — the turn stops at the next safe point", "warning"))
        elif self.bar.shown:
            self.bar.choose("later")

    # -- agent events ---------------------------------------------------------------------------
    def on_turn_began(self, message: TurnBegan) -> None:
        self.status.set(activity=f"turn {message.event.turn}")

    def on_step_began(self, message: StepBegan) -> None:
        self._assistant = None
        self.status.set(activity=f"step {message.event.step}")

    def on_context_measured(self, message: ContextMeasured) -> None:
        report = message.event.report
        self.gauge.update_report(report)
        self.status.set(calibration=float(report.calibration_ratio))
        self._check_breakpoint(report)

    async def on_text_streamed(self, message: TextStreamed) -> None:
        if self._assistant is None:
            self._assistant = AssistantMessage()
            await self.chat.mount(self._assistant)
        await self._assistant.write(message.event.text)

    async def on_reply_done(self, message: ReplyDone) -> None:
        ev = message.event
        if self._assistant is not None:
            await self._assistant.finish(ev.text + (" …[interrupted]" if ev.partial else "") if ev.text else None)
        self._assistant = None
        label = self.status.info.model
        inp, out = int(ev.usage.get("input_tokens", 0)), int(ev.usage.get("output_tokens", 0))
        self.status.add_usage(inp, out, cost_usd(label, ev.usage))

    def on_tool_began(self, message: ToolBegan) -> None:
        ev = message.event
        self.chat.mount(ToolPanel(ev.call_id, ev.name, dict(ev.arguments)))
        self.status.set(activity=f"tool: {ev.name}")

    def on_tool_ended(self, message: ToolEnded) -> None:
        ev = message.event
        panel = self.chat.panel(ev.call_id)
        if panel is None:
            panel = ToolPanel(ev.call_id, ev.name, {})
            self.chat.mount(panel)
        panel.finish(ev.content, ev.is_error, ev.duration_ms, ev.meta)

    def on_notice_posted(self, message: NoticePosted) -> None:
        self.chat.mount(NoticeLine(message.event.message, message.event.level))

    def on_compacted(self, message: Compacted) -> None:
        ev = message.event
        saved = f": {ev.tokens_before:,} → {ev.tokens_after:,} tokens" if ev.tokens_before else ""
        self.chat.mount(NoticeLine(f"compacted events {ev.first_id}–{ev.last_id} ({ev.method}){saved}; originals kept in the log"))

    def on_turn_ended(self, message: TurnEnded) -> None:
        ev = message.event
        self.busy = False
        self._assistant = None
        self.status.set(activity="idle")
        if ev.stop_reason == "cancelled":
            self.chat.mount(NoticeLine(f"turn {ev.turn} interrupted after {ev.steps} step(s); the log is consistent", "warning"))
        elif ev.stop_reason == "max_steps":
            self.chat.mount(NoticeLine(f"turn {ev.turn} stopped at the step limit", "warning"))
        pending, self._pending = self._pending, []
        for action, arg in pending:
            self.session_action(action, arg)

    # -- breakpoints ----------------------------------------------------------------------------
    def _level_of(self, report: ContextReport) -> str:
        """The higher of the engine's advice and the gauge's own reading at the configured thresholds:
        the prompt must agree with what the gauge shows."""
        cfg = getattr(self.session, "config", None)
        warn = 100.0 * float(getattr(cfg, "compress_at", 0.75) or 0.75)
        full = 100.0 * float(getattr(cfg, "new_session_at", 0.90) or 0.90)
        pct = float(report.usage_pct)
        by_pct = "full" if pct >= full else "compress" if pct >= warn else "ok"
        by_advice = _ADVICE_LEVEL.get(report.advice, "ok")
        return by_pct if _RANK[by_pct] >= _RANK[by_advice] else by_advice

    def _check_breakpoint(self, report: ContextReport) -> None:
        level, previous = self._level_of(report), self._level
        self._level = level
        if level == "ok":
            self.bar.hide()
        if _RANK[level] <= _RANK[previous]:
            return
        if level == "full":
            self.bar.hide()
            self.push_screen(BreakpointModal(float(report.usage_pct)), self._after_full_prompt)
        elif bool(getattr(self.session.config, "auto_compact", False)):
            self.chat.mount(NoticeLine(f"context at {report.usage_pct:.0f}% — auto-compacting (auto_compact is on)", "warning"))
            self.session_action("compact", None)
        else:
            self.bar.show(float(report.usage_pct))

    def _after_full_prompt(self, choice: str | None) -> None:
        if choice == "compact":
            self.session_action("compact", None)
        elif choice == "new_session":
            self.session_action("new_session", None)

    def on_breakpoint_bar_chosen(self, message: BreakpointBar.Chosen) -> None:
        if message.choice == "compact":
            self.session_action("compact", None)

    def action_breakpoint(self, choice: str) -> None:
        if self.bar.shown:
            self.bar.choose(choice)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "breakpoint":
            return self.is_mounted and bool(self.query("#breakpoint")) and self.bar.shown
        return True

    def session_action(self, action: str, arg: str | None) -> None:
        """Run a session action now, or when the running turn ends (the agent is not re-entrant)."""
        if self.busy:
            self._pending.append((action, arg))
            self.notify(f"{action.replace('_', ' ')} will run when this turn ends")
            return
        if action == "compact":
            self.start_compact(arg)
        elif action == "new_session":
            self.start_new_session(with_summary=True)

    async def action_quit(self) -> None:
        self._stopping = True
        self.cancel.set()
        self.exit(0)


def _notice(message: str, level: str) -> Any:
    from ctxagent.agent.events import Notice

    return Notice(message, level)


def _turn_finished(turn: int, stop: str) -> Any:
    from ctxagent.agent.events import TurnFinished

    return TurnFinished(turn=turn, stop_reason=stop, text="", steps=0)


def run_app(args: argparse.Namespace) -> int:
    """`ctxagent` (and --resume / --continue): build the session and agent from the CLI args, run the app."""
    from ctxagent.tui.launch import launch

    return launch(
        args,
        label=getattr(args, "app_label", "") or "",
        initial_input=getattr(args, "initial_input", "") or "",
        probe=getattr(args, "probe", True),
    )


def default_cwd(args: argparse.Namespace) -> Path:
    return Path(getattr(args, "cwd", None) or ".").resolve()
