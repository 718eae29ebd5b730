"""The agent loop: small and linear.

A user turn runs steps — build the context → stream the model (agent/step.py) → run its tool calls
(agent/tool_calls.py) → append the results — until a step ends without tool calls, the step limit,
a cancel, or an error the loop cannot retry. The context is rebuilt and checked before EVERY step,
inside the tool loop (a multi-step turn keeps appending tool output; checking once per user message
is how agents hit a 400). The history is the append-only session log; nothing here rewrites it.

`Agent` is composed of plain parts, each with its own state: a `StepRunner` (the steps and their
reports), a `ToolRunner` (permissions, checkpoints, tool results) and a `ServerContext` (the
provider's own context management), sharing one `Journal` (agent/parts.py) for log, memory and UI.
What a user does to a session besides a message (rewind, remember, a new session, a model switch) is
one function each in agent/session_ops.py; the Agent's methods call them with its own log and stores.
`compact` (/compact, auto_compact) is the user asking for a summary now; a step's own relief is the
builder's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ctxagent.agent.hooks import Hooks
from ctxagent.agent.instructions.loading import NestedInstructions, loaded_nested
from ctxagent.agent.parts import AgentParts, Approver, Journal, deny_mutations
from ctxagent.agent.permissions import PLAN_MODE, Allowance
from ctxagent.agent.providers.protocol import CUT_STOPS
from ctxagent.agent.server_context import ServerContext, seen_reports
from ctxagent.agent.session import Session, endpoint_for, record_endpoint
from ctxagent.agent.session_ops import (
    RewindMenu,
    RewindMode,
    compaction_done,
    new_session,
    record_handoff,
    remember,
    rewind,
    rewind_menu,
)
from ctxagent.agent.step import StepRunner
from ctxagent.agent.tool_calls import ToolRunner
from ctxagent.agent.updates import AgentEvent, CompactionDone, HandoffDrafted, TurnFinished, TurnStarted
from ctxagent.agent.user_tools import direct_calls, direct_calls_event, scan_mentions
from ctxagent.context.builder.dispatch import build
from ctxagent.context.builder.inputs import BuildResult
from ctxagent.context.builder.step import record_system_prompt
from ctxagent.context.errors import CtxagentError
from ctxagent.context.events import ErrorData, ImageRef, TemplateRef, ToolResultData, UserData
from ctxagent.context.floor.display import plural
from ctxagent.context.history import Event, SessionLog
from ctxagent.context.images import Image, store_image
from ctxagent.context.monitor import usage_text
from ctxagent.context.prompt_cache import rules_for
from ctxagent.context.report import ContextReport
from ctxagent.tools.contract import BudgetStatus

if TYPE_CHECKING:
    from ctxagent.agent.checkpoints.store import Checkpoints, ConfirmOverwrite, RewindResult
    from ctxagent.context.builder.step import Builder
    from ctxagent.context.memory import MemoryStore

__all__ = ["Agent", "AgentParts", "Approver", "deny_mutations"]


class Agent:
    def __init__(
        self,
        session: Session,
        parts: AgentParts,
        *,
        on_event: Callable[[AgentEvent], None] | None = None,
        approver: Approver | None = None,
        builder: Builder = build,
    ):
        """`builder`: the build function every step calls (`context.builder.dispatch.build`); a benchmark
        passes one that times it."""
        self.session = session
        self.parts = parts
        self.journal = Journal(session.log, parts.memory, on_event)
        reports = seen_reports(session.log.events, [
            ContextReport.from_dict(e.context_report.report) for e in session.log.of_kind("context_report")
        ], (session.config.compress_at, session.config.new_session_at))
        self.server = ServerContext(session, parts.provider, parts.calibrator, self.journal)
        self.steps = StepRunner(session, parts, self.journal, self.server, reports, builder)
        self.tools = ToolRunner(session, parts, self.journal, approver or deny_mutations)
        # the user's (or a trusted repository's) programs for events: agent/hooks.py
        self.hooks = Hooks(session.config, session.root, self.journal, str(session.id),
                           reports[-1].usage_pct if reports else None)
        self.tools.hooks = self.steps.hooks = self.hooks
        # compact_context (tools/budget_tools.py): the model's request, honoured before its next step
        self.compaction_request: str | None = None  # its focus ("" for none); None = no request
        self.tools.status = self.budget_status
        self.tools.request_compaction = self.request_compaction
        self.tools.handoff = lambda goal: self.handoff(goal, by="model").text
        # a folder's own AGENTS.md / CLAUDE.md, once a tool touches a path beneath it (agent/instructions/loading.py)
        self.nested = NestedInstructions(session.root, session.log, loaded_nested(parts.system), self.journal.notice)
        self.tools.touched = self._touched
        # the stable prefix, whenever it changed, so `inspect` can rebuild any step exactly
        record_system_prompt(session.log, parts.system, parts.registry.specs())
        # where the requests go, whenever it changed (/model), so offline commands send to it too
        record_endpoint(session.log, endpoint_for(session.config, parts.model_label))
        self._answer_dangling_calls()
        self.hooks.session_start(resumed=self.log.turn > 0)

    # -- what the front ends read ---------------------------------------------------------------
    @property
    def log(self) -> SessionLog:
        return self.session.log

    @property
    def reports(self) -> list[ContextReport]:
        """One report per step sent, oldest first (read back from the log on resume)."""
        return self.steps.reports

    @property
    def last_report(self) -> ContextReport | None:
        return self.reports[-1] if self.reports else None

    @property
    def last_build(self) -> BuildResult | None:
        """The last request built: sent, or only previewed (after /compact, /rewind, a resume)."""
        return self.steps.last_build

    @property
    def last_build_sent(self) -> bool:
        return self.steps.last_build_sent

    @property
    def step(self) -> int:
        """Steps are numbered 1, 2, … in request order across the whole session."""
        return self.steps.step

    @property
    def allowed_for_session(self) -> set[Allowance]:
        """What the user allowed for the rest of this session: each a tool with its exact command or path."""
        return self.tools.allowed_for_session

    @property
    def model_label(self) -> str:
        return self.parts.model_label

    @property
    def memory(self) -> MemoryStore | None:
        return self.parts.memory

    @property
    def checkpoints(self) -> Checkpoints | None:
        return self.parts.checkpoints

    @property
    def calibration_ratio(self) -> float:
        return float(self.parts.calibrator.ratio)

    def memory_stores(self) -> list[MemoryStore]:
        """Every store this session writes to: the project's, and the user's (cross-project)."""
        return self.parts.memory_stores()

    # -- turns ----------------------------------------------------------------------------------
    def run_turn(self, text: str, cancel: threading.Event | None = None, images: list[Image] | None = None,
                 template: TemplateRef | None = None) -> TurnFinished:
        """A user message: files it mentions as `@path` are attached first (agent/user_tools.py), then
        the steps run until the model stops calling tools. `images`: pasted into the prompt (ACP),
        checked by context/images.py; their bytes go to the attachment store, the log holds references.
        `template`: the custom command `text` was expanded from (a project's text is not the user's words)."""
        files, notes = scan_mentions(self.session.root, text)  # a mention that attaches nothing is said
        mentions = [("read_file", {"path": p}) for p in files]
        return self._turn(text, cancel or threading.Event(), mentions, ask_model=True, notes=notes, images=images,
                          template=template)

    def _keep_image(self, image: Image) -> ImageRef | None:
        try:
            return store_image(self.parts.spill, image)
        except CtxagentError as exc:  # a full disk: the turn goes on without it, and says so
            self.journal.notice(f"an image ({image.media_type}, {image.size:,} bytes) could not be kept: {exc}", "warning")
            return None

    def run_command(self, command: str, cancel: threading.Event | None = None) -> TurnFinished:
        """`!command` from the prompt: a turn with one shell call and no model call. The user typed it:
        it is not asked (agent/permissions.py `must_ask`), and it runs in the sandbox like every command."""
        return self._turn(f"!{command}", cancel or threading.Event(), [("shell", {"command": command})], ask_model=False)

    def _turn(self, text: str, cancel: threading.Event, direct: list[tuple[str, dict[str, Any]]], *,
              ask_model: bool, notes: list[str] | None = None, images: list[Image] | None = None,
              template: TemplateRef | None = None) -> TurnFinished:
        turn = self.log.next_turn
        blocked = self.hooks.user_prompt(text, turn) if ask_model else None
        if blocked is not None:  # not sent and not logged as a message: the hook's event says why
            self.journal.notice(f"prompt blocked by a user_prompt hook: {blocked}", "warning")
            done = TurnFinished(turn=turn, stop_reason="blocked", text="", steps=0)
            self.journal.emit(done)
            return done
        planning = ask_model and self.session.config.permission_mode == PLAN_MODE
        refs = [ref for image in images or () if (ref := self._keep_image(image)) is not None]
        self.journal.record(UserData(text=text, turn=turn, plan=planning or None, images=refs or None, template=template))
        self.journal.emit(TurnStarted(turn, text))
        for note in notes or []:
            self.journal.notice(note, "warning")
        final_text, steps, stop = "", 0, "end_turn"
        error: ErrorData | None = None
        self.tools.start_turn()
        try:
            if direct:
                calls = direct_calls(turn, direct)
                self.journal.record(direct_calls_event(calls, self.step, turn))
                self.tools.run(calls, turn, cancel, by_user=True)  # the user's own: never asked (agent/permissions.py)
            while ask_model:
                if cancel.is_set():
                    stop = "cancelled"
                    break
                if steps >= self.session.config.max_steps:
                    stop = "max_steps"
                    self.journal.notice(f"stopped after {plural(steps, 'step')} (--max-steps); ask to continue if needed", "warning")
                    break
                steps += 1
                self._requested_compaction()
                outcome = self.steps.run(turn, cancel)
                final_text = outcome.text or final_text
                if outcome.error is not None:
                    stop, error = "error", outcome.error
                    break
                if not outcome.calls:
                    # a reply cut at the output limit or the size cap ends the turn too: say so
                    stop = "cancelled" if cancel.is_set() else outcome.stop if outcome.stop in CUT_STOPS else "end_turn"
                    break
                self.tools.run(outcome.calls, turn, cancel)
        finally:
            self.tools.end_turn(turn)
            self.log.sync()
            self.parts.calibrator.save()
        report = self.last_report
        finished = stop == "end_turn" or stop in CUT_STOPS  # the model answered (in full or cut)
        if finished and self.session.config.auto_compact and report and report.advice != "ok":
            # past the compress breakpoint with auto_compact on: compact now, between turns, so the
            # next turn starts from the summary instead of paying for it mid-step
            self.journal.notice(f"context at {usage_text(report.usage_pct)}: compacting automatically (auto_compact)", "info")
            self.journal.safe(lambda: self.compact(trigger="auto"))
        done = TurnFinished(turn=turn, stop_reason=stop, text=final_text, steps=steps,
                            error_type=error.error_type if error else "", error=error.message if error else "")
        self.hooks.stop(done)
        self.journal.emit(done)
        return done

    # -- what a user does to the session --------------------------------------------------------
    def compact(self, focus: str | None = None, trigger: str = "manual") -> CompactionDone | None:
        """Compact now (/compact, `ctxagent compact`; auto_compact: `trigger="auto"`; compact_context:
        `trigger="model"`): summarize the oldest visible turns."""
        from ctxagent.context.compact import compact_now

        self.hooks.pre_compact(trigger, focus, self.log.turn)
        before = self.last_report.total if self.last_report else 0
        record = compact_now(self.log.events, summarize=self.parts.summarize, focus=focus, keep_turns=1)
        if record is None:
            self.journal.notice("nothing to compact yet", "info")
            return None
        self.journal.record(record)
        self.log.sync()
        if record.note:  # a summary-model fallback is never silent
            self.journal.notice(f"compaction: {record.note}", "warning")
        report = self.preview()
        after = self.parts.calibrator.apply(report.total) if report else 0
        done = compaction_done(self.log, record, before, after)
        self.journal.emit(done)
        return done

    def handoff(self, goal: str | None = None, *, by: str = "user") -> HandoffDrafted:
        """/handoff [goal], the handoff tool: draft a new session's opening message, log it, show it
        (the app opens its editor on it; headless prints it). Confirming is `open_handoff`."""
        ev, text = record_handoff(self.log, goal, by)
        drafted = HandoffDrafted(goal=ev.data.get("goal", ""), text=text, event_id=ev.id, by=by)
        self.journal.emit(drafted)
        return drafted

    def request_compaction(self, focus: str | None) -> None:
        """compact_context: compact before the next step (the same path as /compact), with `focus`."""
        self.compaction_request = (focus or "").strip()

    def _requested_compaction(self) -> None:
        focus, self.compaction_request = self.compaction_request, None
        if focus is None:
            return
        self.journal.notice("the model asked to compact the context" + (f" (focus: {focus})" if focus else ""), "info")
        self.journal.safe(lambda: self.compact(focus or None, trigger="model"))

    def budget_status(self) -> BudgetStatus:
        """What context_status shows: the last build and the log's state, without building again."""
        build = self.steps.last_build
        cold = self.steps.cache.log_state(list(self.log.events)).cold
        ttl_s = rules_for(self.parts.model_label, self.session.config.cache_ttl).ttl_s
        return BudgetStatus(
            report=build.report if build is not None else self.last_report,
            pruned_ids=tuple(build.pruned_ids) if build else (), spilled_ids=tuple(build.spilled_ids) if build else (),
            masked=tuple((a, b) for a, b in build.masked) if build else (), cold=cold.cold(ttl_s),
            cache_ttl_s=ttl_s,
            last_model=cold.last_model, model=self.parts.model_label, compaction_requested=self.compaction_request,
        )

    def preview(self) -> ContextReport | None:
        """Build the next request without sending or logging it — the gauge's figure after /compact,
        /rewind or a resume. None when even the relieved history cannot fit."""
        return self.steps.preview(self.log.turn)

    def remember(self, text: str) -> Event:
        """/remember TEXT (see `remember`: the pin is in the log even when the memory store then fails)."""
        return remember(self.log, text, self.parts.memory)

    def rewind_menu(self) -> RewindMenu:
        return rewind_menu(self.log, self.parts.checkpoints)

    def rewind(self, turn: int, mode: RewindMode = "both", confirm_overwrite: ConfirmOverwrite | None = None) -> RewindResult:
        return rewind(self.log, turn, mode, checkpoints=self.parts.checkpoints, memory=self.memory_stores(),
                      confirm_overwrite=confirm_overwrite)

    def new_session(self, with_summary: bool, open_session: Callable[..., Session] | None = None) -> Session:
        """A new session of the same repository and config, child of this one (see `new_session`)."""
        return new_session(self.session, with_summary, self.parts.summarize, open_session)

    # -- helpers ------------------------------------------------------------------------------
    def _touched(self, paths: list[str]) -> None:
        """Paths the tools worked on: a nested instruction file not yet loaded joins the system prompt
        at its end (the prefix grows), logged before the next step sends it."""
        added = self.nested.touched(paths)
        if added:
            self.parts.system = "\n\n".join([self.parts.system, *added])
            record_system_prompt(self.log, self.parts.system, self.parts.registry.specs())

    def _answer_dangling_calls(self) -> None:
        """A run killed between a tool call and its result leaves a call without an answer, which
        both APIs reject; on resume, answer it in the log, saying what happened."""
        answered = {e.tool_result.call_id for e in self.log.events if e.kind == "tool_result"}
        dangling = [call for ev in self.log.events if ev.kind == "assistant" for call in ev.assistant.tool_calls
                    if call.id not in answered]
        for call in dangling:
            self.journal.append(ToolResultData(
                call_id=call.id, name=call.name, is_error=True,
                content="interrupted: the session stopped before this tool finished; its effect is unknown — check before retrying",
            ))
