"""Slash-command handlers for the app (a mixin of CtxApp): one `cmd_<name>(arg)` per registry entry.

Anything that may call the model or touch files (compact, new session with summary, rewind) runs in
a thread worker with the app marked busy, so the UI never blocks and turns never interleave.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from ctxagent.context.report import ContextReport
from ctxagent.tui.chat import NoticeLine
from ctxagent.tui.commands import help_text, parse_slash
from ctxagent.tui.context_screen import ContextScreen
from ctxagent.tui.memory_screen import MemoryScreen
from ctxagent.tui.pickers import ConfirmModal, InfoModal, SessionPicker
from ctxagent.tui.prompt import ChatInput
from ctxagent.tui.rewind_screen import RewindChoice, RewindScreen
from ctxagent.tui.transcript import cost_markdown
from textual import work
from textual.message import Message


class ActionFinished(Message):
    """A worker-run session action ended; `reattach` re-renders the chat from the log."""

    def __init__(self, action: str, ok: bool, detail: str = "", reattach: Any = None, restore_input: str = "") -> None:
        super().__init__()
        self.action = action
        self.ok = ok
        self.detail = detail
        self.reattach = reattach  # a Session to attach, or True for the current one
        self.restore_input = restore_input


def estimate_after_compaction(report: ContextReport, tokens_after: int) -> ContextReport:
    """The gauge's view right after /compact, until the next build measures it exactly."""
    ratio = report.calibration_ratio or 1.0
    raw_after = tokens_after / ratio
    used = dict(report.used)
    movable = used.get("hot", 0) + used.get("tools", 0)
    fixed = report.total - movable
    factor = max(0.0, raw_after - fixed) / movable if movable else 1.0
    used["hot"] = int(used.get("hot", 0) * factor)
    used["tools"] = int(used.get("tools", 0) * factor)
    reserve = int(report.used.get("reserve") or report.budget.get("reserve", 0))
    pct = 100.0 * (tokens_after + reserve) / report.window if report.window else 0.0
    advice = "new_session" if pct >= 90 else "compress" if pct >= 75 else "ok"
    return replace(report, used=used, total=int(raw_after), calibrated_total=int(tokens_after), usage_pct=pct,
                   advice=advice, notes=[*report.notes, "estimated after /compact"])


class SlashCommandsMixin:
    """Needs the CtxApp attributes: session, agent, busy, chat, gauge, status, make_agent, ..."""

    session: Any
    agent: Any
    busy: bool
    open_session_fn: Any

    def run_slash(self, text: str) -> None:
        parsed = parse_slash(text)
        app: Any = self
        if parsed is None:
            return
        if parsed.command is None:
            app.notify(f"unknown command /{parsed.name} — /help lists them", severity="error")
            return
        if app.agent is None and parsed.command.name not in ("help", "quit"):
            app.notify("No model is configured yet.", severity="error")
            return
        getattr(self, f"cmd_{parsed.command.name}")(parsed.arg)

    # -- simple ones ------------------------------------------------------------------------------
    def cmd_help(self, arg: str) -> None:
        self.push_screen(InfoModal("## Slash commands\n\n" + help_text()))  # type: ignore[attr-defined]

    def cmd_quit(self, arg: str) -> None:
        self.run_action("quit")  # type: ignore[attr-defined]

    def cmd_cost(self, arg: str) -> None:
        label = self.status.info.model  # type: ignore[attr-defined]
        self.push_screen(InfoModal(cost_markdown(label, self.session.log.events)))  # type: ignore[attr-defined]

    def cmd_context(self, arg: str) -> None:
        report = getattr(self.agent, "last_report", None) or self.gauge.report  # type: ignore[attr-defined]
        self.push_screen(ContextScreen(report, self.session.log.events))  # type: ignore[attr-defined]

    def cmd_memory(self, arg: str) -> None:
        store = self.agent.memory
        self.push_screen(MemoryScreen(store, arg))  # type: ignore[attr-defined]

    def cmd_remember(self, arg: str) -> None:
        app: Any = self
        if not arg.strip():
            app.notify("usage: /remember TEXT — e.g. /remember never edit generated files", severity="warning")
            return
        try:
            app.agent.remember(arg)
        except Exception as exc:  # memory is a side system: the pin is in the log regardless
            app.notify(f"memory store: {exc}", severity="warning")
        app.chat.mount(NoticeLine(f"📌 pinned: {arg.strip()}"))

    def cmd_clear(self, arg: str) -> None:
        app: Any = self
        app.chat.remove_children()
        app.chat.mount(NoticeLine("view cleared — the session log keeps everything (/rewind, /resume, /context)"))

    def cmd_model(self, arg: str) -> None:
        app: Any = self
        current = app.status.info.model
        if not arg.strip():
            app.notify(f"model: {current} — switch with /model provider:name", title="model")
            return
        if app.busy:
            app.notify("wait for the turn to end before switching models", severity="warning")
            return
        old = self.session.config.model
        self.session.config.model = arg.strip()
        try:
            app.agent = app.make_agent(self.session, on_event=app.on_agent_event, approver=app.approve)
        except Exception as exc:
            self.session.config.model = old
            app.notify(f"cannot switch to {arg.strip()}: {exc}", severity="error")
            return
        label = app.agent.model_label
        app.status.set(model=label)
        app.chat.mount(NoticeLine(f"model: {label}"))

    # -- compaction -----------------------------------------------------------------------------
    def cmd_compact(self, arg: str) -> None:
        self.session_action("compact", arg or None)  # type: ignore[attr-defined]

    def start_compact(self, focus: str | None) -> None:
        app: Any = self
        app.busy = True
        app.status.set(activity="compacting")
        self._compact_worker(focus)

    @work(thread=True, exclusive=True, group="agent")
    def _compact_worker(self, focus: str | None) -> None:
        app: Any = self
        before = app.agent.last_report
        try:
            done = app.agent.compact(focus)
        except Exception as exc:
            app.post_message(ActionFinished("compact", False, f"compaction failed: {type(exc).__name__}: {exc}"))
            return
        detail = ""
        if done is not None and before is not None and app.agent.last_report is before:
            detail = "estimate"
            app.post_message(GaugeEstimate(estimate_after_compaction(before, int(done.tokens_after))))
        app.post_message(ActionFinished("compact", done is not None, detail))

    def on_gauge_estimate(self, message: GaugeEstimate) -> None:
        gauge = self.gauge  # type: ignore[attr-defined]
        if gauge.report is None or gauge.report.usage_pct > message.report.usage_pct:
            gauge.update_report(message.report)
            self._level = self._level_of(message.report)  # type: ignore[attr-defined]
            if self._level == "ok":  # type: ignore[attr-defined]
                self.bar.hide()  # type: ignore[attr-defined]

    # -- sessions ---------------------------------------------------------------------------------
    def cmd_new(self, arg: str) -> None:
        if self.busy:
            self._pending.append(("new_session", None))  # type: ignore[attr-defined]
            return
        self.start_new_session(with_summary=arg.strip().lower() in ("summary", "seed", "--summary"))

    def _open(self, **kwargs: Any) -> Any:
        fn = self.open_session_fn
        if fn is None:
            from ctxagent.agent.session import open_session as fn
        return fn(self.session.root, self.session.config, **kwargs)

    def start_new_session(self, with_summary: bool) -> None:
        app: Any = self
        app.busy = True
        app.status.set(activity="new session")
        self._new_session_worker(with_summary)

    @work(thread=True, exclusive=True, group="agent")
    def _new_session_worker(self, with_summary: bool) -> None:
        app: Any = self
        old = self.session
        try:
            new = app.agent.new_session(with_summary, self.open_session_fn)
        except Exception as exc:
            app.post_message(ActionFinished("new session", False, f"{type(exc).__name__}: {exc}"))
            return
        what = "with a summary of" if with_summary else "after"
        app.post_message(ActionFinished("new session", True, f"new session {new.id} {what} {old.id}", reattach=new))

    def cmd_resume(self, arg: str) -> None:
        from ctxagent.agent.session import list_sessions

        app: Any = self
        if app.busy:
            app.notify("wait for the turn to end first", severity="warning")
            return
        sessions = list_sessions(self.session.root)
        app.push_screen(SessionPicker(sessions, str(self.session.id)), self._after_resume_pick)

    def _after_resume_pick(self, session_id: str | None) -> None:
        app: Any = self
        if not session_id or session_id == str(self.session.id):
            return
        try:
            new = self._open(resume=session_id)
        except Exception as exc:
            app.notify(f"cannot resume {session_id}: {exc}", severity="error")
            return
        app.attach(new)
        app.chat.mount(NoticeLine(f"resumed session {session_id}"))

    # -- rewind -------------------------------------------------------------------------------------
    def cmd_rewind(self, arg: str) -> None:
        app: Any = self
        if app.busy:
            app.notify("wait for the turn to end (or Esc) before rewinding", severity="warning")
            return
        menu = app.agent.rewind_menu()
        if menu.note and menu.turns:
            app.notify(f"{menu.note}; conversation rewind only", severity="warning")
        app.push_screen(RewindScreen(menu.turns, has_code=menu.has_code), self._after_rewind_pick)

    def _after_rewind_pick(self, choice: RewindChoice | None) -> None:
        if choice is None:
            return
        app: Any = self
        app.busy = True
        app.status.set(activity="rewinding")
        self._rewind_worker(choice)

    @work(thread=True, exclusive=True, group="agent")
    def _rewind_worker(self, choice: RewindChoice) -> None:
        app: Any = self
        from ctxagent.agent.session_ops import describe_rewind, find_user_turn

        try:
            text = str(find_user_turn(self.session.log, choice.turn).data.get("text", ""))
            result = app.agent.rewind(choice.turn, choice.mode, self._confirm_blocking)
        except Exception as exc:
            app.post_message(ActionFinished("rewind", False, f"rewind failed: {type(exc).__name__}: {exc}"))
            return
        restore = text if choice.mode in ("both", "conversation") else ""
        app.post_message(ActionFinished("rewind", True, describe_rewind(result, choice.turn, choice.mode),
                                        reattach=True, restore_input=restore))

    def _confirm_blocking(self, *args: Any, **kwargs: Any) -> bool:
        """For the checkpoint API, on the worker thread: ask before overwriting files changed outside."""
        app: Any = self
        files = [str(a) for a in args if isinstance(a, str)] + [str(x) for a in args if isinstance(a, (list, tuple)) for x in a]
        answered = threading.Event()
        box: list[bool] = []

        def done(yes: bool | None) -> None:
            box.append(bool(yes))
            answered.set()

        app.call_from_thread(app.push_screen, ConfirmModal(
            "Overwrite files changed outside the agent since that turn?", "\n".join(files[:20])), done)
        answered.wait()
        return box[0]

    def on_action_finished(self, message: ActionFinished) -> None:
        app: Any = self
        app.busy = False
        app.status.set(activity="idle")
        if message.reattach is not None:
            app.attach(self.session if message.reattach is True else message.reattach)
        if message.detail and message.detail != "estimate":
            app.chat.mount(NoticeLine(message.detail, "info" if message.ok else "error"))
        if message.restore_input:
            box = app.query_one("#input", ChatInput)
            box.value = message.restore_input
            box.cursor_position = len(message.restore_input)
        pending, app._pending = app._pending, []
        for action, arg in pending:
            app.session_action(action, arg)


class GaugeEstimate(Message):
    def __init__(self, report: ContextReport) -> None:
        super().__init__()
        self.report = report
