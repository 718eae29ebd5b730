"""The agent loop: small and linear.

A user turn runs steps — build the context → stream the model (agent/step.py) → run its tool calls
(agent/tool_calls.py) → append the results — until a step ends without tool calls, the step limit,
a cancel, or an error the loop cannot retry. The context is rebuilt and checked before EVERY step,
inside the tool loop (a multi-step turn keeps appending tool output; checking once per user message
is how agents hit a 400). The history is the append-only session log; nothing here rewrites it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ctxagent.agent.providers.protocol import Provider
from ctxagent.agent.server_context import ServerContextMixin, seen_reports
from ctxagent.agent.session import Session
from ctxagent.agent.session_ops import SessionOpsMixin, compaction_done
from ctxagent.agent.step import StepMixin
from ctxagent.agent.tool_calls import ToolCallsMixin
from ctxagent.agent.updates import (
    AgentEvent,
    CompactionDone,
    ContextBuilt,
    Notice,
    PermissionDecision,
    PermissionRequest,
    TurnFinished,
    TurnStarted,
)
from ctxagent.context.budget import Budget
from ctxagent.context.build.cache import BuildCache
from ctxagent.context.build.inputs import BuildResult
from ctxagent.context.calibrator import Calibrator
from ctxagent.context.errors import ContextOverflowError
from ctxagent.context.events import ErrorData, SystemPromptData, ToolResultData, UserData
from ctxagent.context.report import ContextReport
from ctxagent.context.spill import SpillStore
from ctxagent.context.tokens import TokenCounter
from ctxagent.tools.contract import ToolRegistry

Approver = Callable[[PermissionRequest], PermissionDecision]


def _ignore(_: AgentEvent) -> None:
    return None


def deny_mutations(req: PermissionRequest) -> PermissionDecision:
    """The headless default without --yes: refuse edits and commands, telling the model why."""
    return PermissionDecision(
        allow=False,
        reason=f"{req.tool} needs permission ({req.permission}) and this run is headless without --yes; "
        "do not retry it — explain what you would change instead.",
    )


@dataclass
class AgentParts:
    """Everything the loop needs, assembled by `agent/factory.py` (or by a test)."""

    provider: Provider
    registry: ToolRegistry
    counter: TokenCounter
    budget: Budget
    calibrator: Calibrator
    spill: SpillStore
    system: str
    model_label: str  # "anthropic:claude-sonnet-4-5"
    tokenizer: str = "o200k_base"  # the counter's family, recorded so `inspect` can rebuild a step
    memory: Any = None  # context.memory MemoryStore, or None
    warm: Any = None  # a WarmProvider for the builder, or None (the builder's session pins)
    summarize: Callable[[str], str] | None = None
    checkpoints: Any = None  # agent.checkpoints.Checkpoints, or None
    tool_config: dict[str, Any] = field(default_factory=dict)


class Agent(StepMixin, ToolCallsMixin, SessionOpsMixin, ServerContextMixin):
    def __init__(
        self,
        session: Session,
        parts: AgentParts,
        *,
        on_event: Callable[[AgentEvent], None] | None = None,
        approver: Approver | None = None,
    ):
        self.session = session
        self.parts = parts
        self.on_event = on_event or _ignore
        self.approver = approver or deny_mutations
        self.allowed_for_session: set[str] = set()
        self._turn_checkpoint: str | None = None
        self._turn_files: set[str] = set()
        self._turn_no = self._current_turn()  # the running turn, stamped on its steps' events
        self._build_cache = BuildCache()  # per-event build work kept across steps: a step costs O(new content)
        # the last request built (sent, or only previewed after /compact, /rewind, a resume): /context shows it
        self.last_build: BuildResult | None = None
        self.last_build_sent = False
        self.reports: list[ContextReport] = seen_reports(session.log.events, [
            ContextReport.from_dict(e.context_report.report) for e in session.log.of_kind("context_report")
        ], (session.config.compress_at, session.config.new_session_at))
        self._record_system_prompt()
        self._answer_dangling_calls()

    # -- public -------------------------------------------------------------------------------
    @property
    def log(self):  # noqa: ANN201 - SessionLog
        return self.session.log

    @property
    def last_report(self) -> ContextReport | None:
        return self.reports[-1] if self.reports else None

    def run_turn(self, text: str, cancel: threading.Event | None = None) -> TurnFinished:
        """A user message: files it mentions as `@path` are attached first (agent/user_tools.py), then
        the steps run until the model stops calling tools."""
        from ctxagent.agent.user_tools import mentioned_files

        mentions = [("read_file", {"path": p}) for p in mentioned_files(self.session.root, text)]
        return self._turn(text, cancel or threading.Event(), mentions, ask_model=True)

    def run_command(self, command: str, cancel: threading.Event | None = None) -> TurnFinished:
        """`!command` from the prompt: a turn with one shell call (asked like the agent's own) and no model call."""
        return self._turn(f"!{command}", cancel or threading.Event(), [("shell", {"command": command})], ask_model=False)

    def _turn(self, text: str, cancel: threading.Event, direct: list[tuple[str, dict[str, Any]]], *,
              ask_model: bool) -> TurnFinished:
        from ctxagent.agent.user_tools import direct_calls, log_direct_calls

        turn = self._next_turn()
        self._turn_no = turn
        user_ev = self.log.append(UserData(text=text, turn=turn))
        self._ingest([user_ev])
        self.on_event(TurnStarted(turn, text))
        final_text, steps, stop = "", 0, "end_turn"
        self._turn_checkpoint = None  # taken before the turn's first file-changing tool
        self._turn_files = set()
        try:
            if direct:
                calls = direct_calls(turn, direct)
                log_direct_calls(self, calls, turn)
                self._run_tools(calls, turn, cancel)
            while ask_model:
                if cancel.is_set():
                    stop = "cancelled"
                    break
                if steps >= self.session.config.max_steps:
                    stop = "max_steps"
                    self._notice(f"stopped after {steps} steps (--max-steps); ask to continue if needed", "warning")
                    break
                steps += 1
                outcome = self._step(turn, text, cancel)
                final_text = outcome.text or final_text
                if outcome.error:
                    stop = "error"
                    break
                if not outcome.calls:
                    stop = "cancelled" if cancel.is_set() else "end_turn"
                    break
                self._run_tools(outcome.calls, turn, cancel)
        finally:
            if self._turn_checkpoint and self.parts.checkpoints is not None:
                files = sorted(self._turn_files)
                self._safe(lambda: self.parts.checkpoints.mark_turn_end(self.session.id, turn, files))
            self.log.sync()
            self.parts.calibrator.save()
        if stop == "end_turn" and self.session.config.auto_compact and self.last_report and self.last_report.advice != "ok":
            # past the compress breakpoint with auto_compact on: compact now, between turns, so the
            # next turn starts from the summary instead of paying for it mid-step
            self._notice(f"context at {self.last_report.usage_pct:.0f}%: compacting automatically (auto_compact)", "info")
            self._safe(lambda: self.compact())
        done = TurnFinished(turn=turn, stop_reason=stop, text=final_text, steps=steps)
        self.on_event(done)
        return done

    def compact(self, focus: str | None = None) -> CompactionDone | None:
        """Compact now (/compact, `ctxagent compact`): summarize the oldest visible turns."""
        from ctxagent.context.compact import compact_now

        before = self.last_report.total if self.last_report else 0
        record = compact_now(self.log.events, summarize=self.parts.summarize, focus=focus, keep_turns=1)
        if record is None:
            self._notice("nothing to compact yet", "info")
            return None
        ev = self.log.append(record)
        self._ingest([ev])
        self.log.sync()
        report = self.preview()
        after = self.parts.calibrator.apply(report.total) if report else 0
        done = compaction_done(self.log, record, before, after)
        self.on_event(done)
        return done

    def preview(self) -> ContextReport | None:
        """Build the next request without sending or logging it — the gauge's figure after /compact,
        /rewind or a resume. None when even the relieved history cannot fit."""
        try:
            result = self._build(self.step + 1, self._current_turn(), "", allow_compaction=False)
        except ContextOverflowError:
            return None
        self.last_build, self.last_build_sent = result, False
        self.on_event(ContextBuilt(result.report.step, result.report))
        return result.report

    # -- helpers ------------------------------------------------------------------------------
    def _record_system_prompt(self) -> None:
        """Log the stable prefix when it changes, so `inspect` can rebuild any step exactly."""
        prompt = SystemPromptData(text=self.parts.system, tools=[s.__dict__ for s in self.parts.registry.specs()])
        last = next((e for e in reversed(self.log.events) if e.kind == "system_prompt"), None)
        if last is None or last.as_(SystemPromptData).to_data() != prompt.to_data():
            self.log.append(prompt)

    def _answer_dangling_calls(self) -> None:
        """A run killed between a tool call and its result leaves a call without an answer, which
        both APIs reject; on resume, answer it in the log, saying what happened."""
        answered = {e.tool_result.call_id for e in self.log.events if e.kind == "tool_result"}
        dangling = [call for ev in self.log.events if ev.kind == "assistant" for call in ev.assistant.tool_calls
                    if call.id not in answered]
        for call in dangling:
            self.log.append(ToolResultData(
                call_id=call.id, name=call.name, is_error=True,
                content="interrupted: the session stopped before this tool finished; its effect is unknown — check before retrying",
            ))

    def _next_turn(self) -> int:
        return self.log.next_turn

    def _current_turn(self) -> int:
        return self.log.turn

    def _ingest(self, events: list) -> None:
        if self.parts.memory is not None:
            self._safe(lambda: self.parts.memory.ingest(events, self.session.id))

    def _notice(self, message: str, level: str = "info") -> None:
        self.on_event(Notice(message, level))

    def _error(self, message: str, error_type: str, step: int | None = None) -> None:
        self.log.append(ErrorData(message=message, error_type=error_type, step=step))
        self._notice(message, "error")

    def _safe(self, fn: Callable[[], Any]) -> Any:
        """Side systems (memory, checkpoints) must never kill a turn: report and go on."""
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001
            self._notice(f"{type(exc).__name__}: {exc}", "warning")
            return None
