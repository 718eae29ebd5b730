"""One step of a turn: build the context, record what was built, stream the model's answer.

`StepRunner` is owned by the `Agent` (agent/loop.py). A step rebuilds the context from the log and
records it (`context.builder.step.build_step`: the compactions the build planned, then a
`context_report` with the sha256 of the request body, so `inspect` can prove a rebuild), then streams
the provider's answer into one `assistant` event. The steps' reports (`reports`, one per step sent)
and the last request built live here.

A provider that says the prompt is too long counts more than the calibrated estimate: the step is
rebuilt once with a calibration that learns it (`refused_ratio`), so the builder's own relief —
pruning, its planned compactions, logged like any — makes it fit, and sent again; when even that
cannot fit or is refused again, the step ends with a clear error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ctxagent.agent.parts import AgentParts, Journal
from ctxagent.agent.providers.protocol import ServerCompaction, ServerEdits, Stop, TextDelta, Waiting
from ctxagent.agent.retry import stream_with_retry
from ctxagent.agent.server_context import Seen, ServerContext, report_as_seen
from ctxagent.agent.session import ModeTrail, record_mode
from ctxagent.agent.session_ops import compaction_done
from ctxagent.agent.updates import AssistantDelta, AssistantDone, ContextBuilt, ModelWaiting, StepStarted
from ctxagent.context.builder.cache import BuildCache
from ctxagent.context.builder.dispatch import build
from ctxagent.context.builder.inputs import BuildResult
from ctxagent.context.builder.step import (
    Builder,
    StepSetup,
    build_next,
    record_step,
    record_system_prompt,
    refused_ratio,
)
from ctxagent.context.errors import ContextLengthError, ContextOverflowError, ProviderError
from ctxagent.context.events import AssistantData, ErrorData
from ctxagent.context.report import ContextReport
from ctxagent.context.request import Request, ToolCall, Usage

if TYPE_CHECKING:
    from ctxagent.agent.hooks import Hooks
    from ctxagent.agent.session import Session


@dataclass
class StepOutcome:
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    stop: str = "end_turn"  # the step's stop reason, as the provider said it
    error: ErrorData | None = None  # what the turn stops on (logged, and said)


class StepRunner:
    """Builds, records and sends the steps of a session's turns."""

    hooks: Hooks | None = None  # the Agent's (agent/hooks.py): pre_compact, context_threshold after each step

    def __init__(self, session: Session, parts: AgentParts, journal: Journal, server: ServerContext,
                 reports: list[ContextReport], builder: Builder = build):
        self.session = session
        self.parts = parts
        self.journal = journal
        self.server = server
        self.reports = reports
        self.builder = builder  # the build function (`context.builder.dispatch.build`; a benchmark passes a timed one)
        self.cache = BuildCache()  # per-event build work kept across steps: a step costs O(new content)
        # the last request built (sent, or only previewed after /compact, /rewind, a resume): /context shows it
        self.last_build: BuildResult | None = None
        self.last_build_sent = False
        self.last_sent: Request | None = None  # the last request recorded as sent: a relief since is priced against it
        self.modes = ModeTrail()  # the mode the log records, folded as it grows (asked at every step)

    @property
    def step(self) -> int:
        """Steps are numbered 1, 2, … in request order across the whole session."""
        return len(self.reports)

    def setup(self) -> StepSetup:
        """The fixed inputs of a build, read from the session's config at each step."""
        cfg, parts = self.session.config, self.parts
        if hasattr(parts.provider, "attachments"):  # the provider reads images from this session's store
            parts.provider.attachments = parts.image_reader
        return StepSetup(
            system=parts.system, tools=parts.registry.specs(), budget=parts.budget, counter=parts.counter,
            model=parts.model_label, strategy=cfg.strategy, protect_turns=cfg.protect_turns,
            thresholds=(cfg.compress_at, cfg.new_session_at), tokenizer=parts.tokenizer, warm=parts.warm,
            summarize=parts.summarize, cache=self.cache, task_state_share=cfg.task_state_share,
            cache_ttl=cfg.cache_ttl,
            images=parts.takes_images,
        )

    def build(self, step: int, turn: int, ratio: float, *, allow_compaction: bool = True) -> BuildResult:
        """The request for `step`, not recorded (raises ContextOverflowError when it cannot fit)."""
        return build_next(self.session.log, self.setup(), step=step, turn=turn, calibration_ratio=ratio,
                          allow_compaction=allow_compaction, builder=self.builder)

    def preview(self, turn: int) -> ContextReport | None:
        """Build the next request without sending or logging it; None when even the relieved history
        cannot fit."""
        try:
            result = self.build(self.step + 1, turn, self.parts.calibrator.ratio, allow_compaction=False)
        except ContextOverflowError:
            return None
        self.last_build, self.last_build_sent = result, False
        self.journal.emit(ContextBuilt(result.report.step, result.report))
        return result.report

    def run(self, turn: int, cancel: threading.Event) -> StepOutcome:
        step = self.step + 1
        if self.parts.registry.refresh():  # tools that arrived (MCP): logged before the step that sends them
            record_system_prompt(self.session.log, self.parts.system, self.parts.registry.specs())
        record_mode(self.session.log, self.session.config.permission_mode, self.modes)  # a Shift+Tab during the turn
        self.journal.emit(StepStarted(step, turn))
        ratio = self.parts.calibrator.ratio
        try:
            result = self.build(step, turn, ratio)
        except ContextOverflowError as exc:
            return StepOutcome(error=self.journal.error(str(exc), "ContextOverflowError", step))
        self._record(step, turn, result, ratio)
        try:
            return self._stream(step, turn, result, cancel)
        except ContextLengthError as exc:
            return self._retry_refused(turn, cancel, result, ratio, exc)
        except ProviderError as exc:
            if cancel.is_set():  # interrupted while it waited to retry (a 429's back-off): a cancel, not an error
                return StepOutcome(stop="cancelled")
            return StepOutcome(error=self.journal.error(str(exc), type(exc).__name__, step))

    def _record(self, step: int, turn: int, result: BuildResult, ratio: float) -> None:
        """Log the step (its planned compactions and its report) and show it. A build that planned a
        compaction fires pre_compact (`trigger="builder"`) before the compaction is logged — the
        summary is already drafted, as the build is pure, but nothing of it is in the session yet."""
        if result.compactions and self.hooks:
            self.hooks.pre_compact("builder", None, turn)
        recorded = record_step(self.session.log, self.setup(), result, calibration_ratio=ratio,
                               body=self.parts.provider.body, previous=self.last_sent)
        self.last_sent = result.request
        for ev in recorded.compactions:
            self.journal.ingest([ev])
            self.journal.emit(compaction_done(self.session.log, ev.compaction, 0, result.report.total))
            if ev.compaction.note:  # a summary-model fallback is never silent
                self.journal.notice(f"compaction: {ev.compaction.note}", "warning")
        self.reports.append(result.report)
        self.last_build, self.last_build_sent = result, True
        self.journal.emit(ContextBuilt(step, result.report))

    def _retry_refused(self, turn: int, cancel: threading.Event, refused: BuildResult, ratio: float,
                       exc: ContextLengthError) -> StepOutcome:
        """The provider counts more than we estimated: rebuild with a calibration that says so (the
        builder's relief does the rest) and send once more — unless the rebuild cannot fit, or is no
        smaller (a strategy that does not relieve)."""
        raised = refused_ratio(refused.report.total, self.parts.budget, ratio)
        self.journal.notice(f"provider says the prompt is too long ({exc}); rebuilding it as if the provider counted "
                            f"{raised:.2f}× ctxagent's estimate, and retrying once", "warning")
        step = self.step + 1
        try:
            result = self.build(step, turn, raised)
        except ContextOverflowError as overflow:
            return StepOutcome(error=self.journal.error(f"{exc}; relieving the history does not make it fit: {overflow}",
                                                        type(exc).__name__, step))
        if result.report.total >= refused.report.total:
            return StepOutcome(error=self.journal.error(
                f"{exc}; strategy {self.session.config.strategy} cannot make the request smaller", type(exc).__name__, step))
        self._record(step, turn, result, raised)
        try:
            return self._stream(step, turn, result, cancel)
        except ProviderError as exc2:
            return StepOutcome(error=self.journal.error(str(exc2), type(exc2).__name__, step))

    def _show_seen(self, step: int, seen: Seen | None) -> None:
        if seen is None or not self.reports:
            return
        cfg = self.session.config
        self.reports[-1] = report_as_seen(self.reports[-1], seen.tokens, (cfg.compress_at, cfg.new_session_at), seen.note)
        self.journal.emit(ContextBuilt(step, self.reports[-1]))

    def _stream(self, step: int, turn: int, result: BuildResult, cancel: threading.Event) -> StepOutcome:
        texts: list[str] = []
        calls: list[ToolCall] = []
        usage = Usage()
        stop = "end_turn"
        partial = False
        error: ErrorData | None = None
        provider = self.parts.provider
        edits: ServerEdits | None = None  # the server's own context management, when asked for
        compaction: ServerCompaction | None = None
        count, seen = self.server.count(result.request, result.report.calibrated_total)
        self._show_seen(step, seen)
        on_retry: Callable[[str], None] = lambda message: self.journal.notice(message, "warning")  # noqa: E731

        try:
            for ev in stream_with_retry(lambda: provider.stream(result.request, cancel), on_retry=on_retry, cancel=cancel):
                if isinstance(ev, TextDelta):
                    texts.append(ev.text)
                    self.journal.emit(AssistantDelta(step, ev.text))
                elif isinstance(ev, ToolCall):
                    calls.append(ev)
                elif isinstance(ev, Usage):
                    usage = ev
                elif isinstance(ev, Stop):
                    stop = ev.reason
                elif isinstance(ev, ServerEdits):
                    edits = ev
                elif isinstance(ev, ServerCompaction):
                    compaction = ev
                elif isinstance(ev, Waiting):
                    self.journal.emit(ModelWaiting(step, ev.seconds))
                if cancel.is_set():
                    stop, partial = "cancelled", bool(texts) or bool(calls)
                    calls = []  # a cancelled step runs no tools
                    break
        except ProviderError as exc:
            # a cut, a stall, or an `error` event inside the 200 stream (overloaded, a server error):
            # what arrived before it is kept, logged as partial with the error
            if not texts and not calls:
                raise
            partial = True
            stop = "stream_error"
            calls = []  # tool calls from a broken stream are not trusted
            message = f"the stream broke ({exc}); kept the {len(''.join(texts))} characters that arrived"
            error = self.journal.error(message, type(exc).__name__, step, level="warning")
        text = "".join(texts)
        server, seen = self.server.outcome(result.request, result.report.total, edits, compaction, usage, count)
        self._show_seen(step, seen)
        self.journal.record(AssistantData(
            text=text,
            tool_calls=calls,
            stop_reason=stop,
            usage=usage,
            step=step,
            turn=turn,
            partial=partial,
            server=server,
        ))
        self.journal.emit(AssistantDone(step, text, len(calls), usage, partial))
        if self.hooks and self.reports:
            self.hooks.context_step(self.reports[-1], usage)
        return StepOutcome(text=text, calls=calls, stop=stop, error=error)
