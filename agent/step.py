"""One step of a turn: build the context, log what was built, stream the model's answer.

A mixin of `Agent` (agent/loop.py), split out so the loop keeps only the turn's shape. A step
rebuilds the context from the log (`context.builder.build`), logs the compactions the build planned
and a `context_report` (with the sha256 of the request body, so `inspect` can prove a rebuild), then
streams the provider's answer into one `assistant` event. A provider that says the prompt is too
long gets one forced compaction and one retry.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxagent.agent.providers.protocol import (
    ServerCompaction,
    ServerEdits,
    Stop,
    TextDelta,
    ToolCallEvent,
    Usage,
)
from ctxagent.agent.retry import stream_with_retry
from ctxagent.agent.session_ops import compaction_done
from ctxagent.agent.updates import (
    AgentEvent,
    AssistantDelta,
    AssistantDone,
    CompactionDone,
    ContextBuilt,
    StepStarted,
)
from ctxagent.context.build.cache import BuildCache
from ctxagent.context.build.dispatch import build, request_sha256
from ctxagent.context.build.inputs import BuildInputs, BuildResult
from ctxagent.context.errors import ContextLengthError, ContextOverflowError, ProviderError, StreamError
from ctxagent.context.events import (
    AssistantData,
    BuildParams,
    ContextReportData,
    ErrorData,
    ToolCallData,
    UsageData,
)
from ctxagent.context.report import ContextReport

if TYPE_CHECKING:
    from ctxagent.agent.loop import AgentParts
    from ctxagent.agent.session import Session
    from ctxagent.context.history import Event, SessionLog


@dataclass
class StepOutcome:
    text: str = ""
    calls: list[ToolCallEvent] = field(default_factory=list)
    error: bool = False


class StepMixin:
    """`_step` and what it needs; every other name it uses on `self` is defined by `Agent`."""

    session: Session
    parts: AgentParts
    log: SessionLog
    on_event: Callable[[AgentEvent], None]
    reports: list[ContextReport]
    last_build: BuildResult | None
    last_build_sent: bool
    _build_cache: BuildCache
    _turn_no: int
    _ingest: Callable[[list[Event]], None]
    _notice: Callable[..., None]
    _error: Callable[..., None]
    compact: Callable[..., CompactionDone | None]
    _server_count: Callable[..., Any]  # agent/server_context.py: the provider's own context management
    _server_outcome: Callable[..., Any]

    @property
    def step(self) -> int:
        """Steps are numbered 1, 2, … in request order across the whole session."""
        return len(self.reports)

    def _step(self, turn: int, query: str, cancel: threading.Event) -> StepOutcome:
        step = self.step + 1
        self.on_event(StepStarted(step, turn))
        try:
            return self._attempt(step, turn, query, cancel)
        except ContextLengthError as exc:
            # The provider counts differently from us: force a compaction and retry once.
            self._notice(f"provider says the prompt is too long ({exc}); compacting and retrying once", "warning")
            if self.compact() is None:
                self._error(str(exc), type(exc).__name__, step)
                return StepOutcome(error=True)
            step = self.step + 1
            try:
                return self._attempt(step, turn, query, cancel)
            except ProviderError as exc2:
                self._error(str(exc2), type(exc2).__name__, step)
                return StepOutcome(error=True)
        except ProviderError as exc:
            self._error(str(exc), type(exc).__name__, step)
            return StepOutcome(error=True)

    def _attempt(self, step: int, turn: int, query: str, cancel: threading.Event) -> StepOutcome:
        """Build, record and send one request; a provider's error goes to the caller."""
        try:
            result = self._build(step, turn, query)
        except ContextOverflowError as exc:
            self._error(str(exc), "ContextOverflowError", step)
            return StepOutcome(error=True)
        self._record_build(step, result)
        return self._stream(step, result, cancel)

    def _build(self, step: int, turn: int, query: str, *, allow_compaction: bool = True) -> BuildResult:
        cfg = self.session.config
        return build(
            BuildInputs(
                events=self.log.events,
                system=self.parts.system,
                tools=self.parts.registry.specs(),
                budget=self.parts.budget,
                counter=self.parts.counter,
                step=step,
                turn=turn,
                strategy=cfg.strategy,
                calibration_ratio=self.parts.calibrator.ratio,
                warm=self.parts.warm,
                summarize=self.parts.summarize,
                allow_compaction=allow_compaction,
                protect_turns=cfg.protect_turns,
                thresholds=(cfg.compress_at, cfg.new_session_at),
                model=self.parts.model_label,
                cache=self._build_cache,
            )
        )

    def _record_build(self, step: int, result: BuildResult) -> None:
        # usually one record; two when the current turn alone overflowed and its older steps were summarized too
        for planned in result.compactions:
            c = planned.data
            ev = self.log.append(c, expect_id=planned.event_id)
            self._ingest([ev])
            self.on_event(compaction_done(self.log, c, 0, result.report.total))
        body = self.parts.provider.body(result.request)
        self.log.append(ContextReportData(
            step=step,
            report=result.report.to_dict(),
            request_sha256=request_sha256(body),
            warm=result.warm_text,
            calibration_ratio=self.parts.calibrator.ratio,
            model=self.parts.model_label,
            build=self._build_params(),
        ))
        self.reports.append(result.report)
        self.last_build, self.last_build_sent = result, True
        self.on_event(ContextBuilt(step, result.report))

    def _build_params(self) -> BuildParams:
        """Every scalar the builder used, so `ctxagent inspect` can rebuild this step exactly."""
        cfg, b = self.session.config, self.parts.budget
        return BuildParams(
            window=b.window, fractions=b.fractions, max_output=b.max_output, profile=b.profile,
            tools_high=b.tools_high, tools_low=b.tools_low, protect_steps=b.protect_steps,
            strategy=cfg.strategy, protect_turns=cfg.protect_turns,
            thresholds=(cfg.compress_at, cfg.new_session_at), tokenizer=self.parts.tokenizer,
        )

    def _stream(self, step: int, result: BuildResult, cancel: threading.Event) -> StepOutcome:
        texts: list[str] = []
        calls: list[ToolCallEvent] = []
        usage = Usage()
        stop = "end_turn"
        partial = False
        provider = self.parts.provider
        edits: ServerEdits | None = None  # the server's own context management, when asked for
        compaction: ServerCompaction | None = None
        count = self._server_count(step, result.request, result.report.calibrated_total)

        def on_retry(message: str) -> None:
            self._notice(message, "warning")

        try:
            for ev in stream_with_retry(lambda: provider.stream(result.request, cancel), on_retry=on_retry, cancel=cancel):
                if isinstance(ev, TextDelta):
                    texts.append(ev.text)
                    self.on_event(AssistantDelta(step, ev.text))
                elif isinstance(ev, ToolCallEvent):
                    calls.append(ev)
                elif isinstance(ev, Usage):
                    usage = ev
                elif isinstance(ev, Stop):
                    stop = ev.reason
                elif isinstance(ev, ServerEdits):
                    edits = ev
                elif isinstance(ev, ServerCompaction):
                    compaction = ev
                if cancel.is_set():
                    stop, partial = "cancelled", bool(texts) or bool(calls)
                    calls = []  # a cancelled step runs no tools
                    break
        except StreamError as exc:
            if not texts and not calls:
                raise
            partial = True
            stop = "stream_error"
            calls = []  # tool calls from a broken stream are not trusted
            message = f"the stream broke ({exc}); kept the {len(''.join(texts))} characters that arrived"
            self.log.append(ErrorData(message=message, error_type=type(exc).__name__, step=step))
            self._notice(message, "warning")
        text = "".join(texts)
        usage_data = UsageData(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                               cache_read=usage.cache_read, cache_write=usage.cache_write)
        usage_d = usage_data.to_data()
        server = self._server_outcome(step, result.request, result.report.total, edits, compaction, usage, count)
        ev = self.log.append(AssistantData(
            text=text,
            tool_calls=[ToolCallData(id=c.id, name=c.name, arguments=c.arguments if c.arguments is not None else {"_raw": c.raw_arguments})
                        for c in calls],
            stop_reason=stop,
            usage=usage_data,
            step=step,
            turn=self._turn_no,
            partial=partial,
            server=server,
        ))
        self._ingest([ev])
        self.on_event(AssistantDone(step, text, len(calls), usage_d, partial))
        return StepOutcome(text=text, calls=calls, error=stop == "stream_error")
