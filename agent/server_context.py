"""What the loop does with the provider's own context management (strategies anthropic-clear / -compact).

The builder sent the history like "full" and asked for the server's edits (context/server_edits.py);
the server may then show the model less than was sent. The loop keeps the record truthful:

- the response's report (applied edits, cleared tokens, a compaction and its billed iteration) is
  logged on the assistant event as `ServerContextData`;
- the gauge's figure for the step becomes what the model saw — the response's prompt tokens —
  instead of what was sent (`report_as_seen`), before sending too when the server's `count_tokens`
  was asked (only past the trigger, where an edit is possible);
- the calibrator, which learns "provider tokens per local token", is fed the prompt before the
  edits (the response's prompt plus the tokens it says it cleared, or count_tokens' original
  count), never the edited one: an edit is not a tokenizer difference;
- a compaction block becomes a `compaction` event (method "server") masking everything the request
  showed, whose block is sent back verbatim from then on.

`ServerContext` is the Agent's side of it (asked by the step runner, agent/step.py, before and after
each request); the functions are the rules it applies.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxagent.agent.parts import Journal
from ctxagent.agent.providers.protocol import ServerCompaction, ServerEdits, TokenCount
from ctxagent.agent.updates import CompactionDone
from ctxagent.context.errors import ProviderError
from ctxagent.context.events import CompactionData, ServerContextData
from ctxagent.context.history import Event, view, view_span
from ctxagent.context.monitor import advice_for
from ctxagent.context.report import ContextReport
from ctxagent.context.request import Request, Usage

if TYPE_CHECKING:
    from ctxagent.agent.providers.protocol import Provider
    from ctxagent.agent.session import Session
    from ctxagent.context.calibrator import Calibrator


def server_record(strategy: str, request: Request, edits: ServerEdits | None, compaction: ServerCompaction | None,
                  usage: Usage, count: TokenCount | None) -> ServerContextData | None:
    """The assistant event's account of the server's context management; None when none was asked for."""
    if not request.server_edits:
        return None
    billed = edits.compaction_usage if edits is not None else None
    return ServerContextData(
        strategy=strategy,
        applied_edits=list(edits.applied) if edits is not None else [],
        compacted=compaction is not None,
        compaction_usage=billed,
        seen_tokens=usage.prompt_tokens or None,
        original_tokens=count.original_input_tokens if count is not None else None,
    )


def acted(record: ServerContextData | None) -> bool:
    return record is not None and (record.compacted or any(e.cleared_input_tokens or e.cleared_tool_uses
                                                           for e in record.applied_edits))


def describe(record: ServerContextData) -> str:
    parts = []
    for e in record.applied_edits:
        parts.append(f"{e.type}: cleared {e.cleared_tool_uses} tool use(s), {e.cleared_input_tokens:,} tokens")
    if record.compacted:
        parts.append("compacted the conversation (compact_20260112)")
    seen = f"; the model saw {record.seen_tokens:,} tokens" if record.seen_tokens else ""
    return "server context management: " + "; ".join(parts) + seen


def report_as_seen(report: ContextReport, seen_tokens: int, thresholds: tuple[float, float], note: str) -> ContextReport:
    """The step's report with the prompt the model saw (provider tokens) as its calibrated total."""
    reserve = report.used.get("reserve", 0)
    pct = round(100.0 * (seen_tokens + reserve) / report.window, 2) if report.window else 0.0
    return dataclasses.replace(report, calibrated_total=seen_tokens, usage_pct=pct,
                               advice=advice_for(pct, thresholds), notes=[*report.notes, note])


def calibration_target(record: ServerContextData | None, usage: Usage) -> int | None:
    """Provider tokens of the prompt as sent (before the server's edits), to calibrate with; None when
    not known (a compaction without a count_tokens answer)."""
    if record is None:
        return usage.prompt_tokens or None
    if record.original_tokens:
        return record.original_tokens
    if record.compacted:
        return None
    return (usage.prompt_tokens + record.cleared_input_tokens) or None


def worth_counting(request: Request, calibrated_total: int) -> bool:
    """count_tokens is asked only where a server edit is possible: past the lowest trigger."""
    return bool(request.server_edits) and calibrated_total > min(e.trigger for e in request.server_edits)


def compaction_event(events: list[Event], compaction: ServerCompaction) -> CompactionData | None:
    """The compaction event standing for what the server compacted: everything the request showed."""
    span = view_span(view(events))
    if span is None:
        return None
    return CompactionData(first_id=span[0], last_id=span[1], summary=compaction.content, method="server",
                          server_block=compaction.block,
                          note="compacted by the provider (compact_20260112); its block is sent back verbatim")


def count_with(provider: Any, request: Request) -> TokenCount | None:
    """The provider's count_tokens, when it has one (only the Anthropic provider does)."""
    counter = getattr(provider, "count_tokens", None)
    return counter(request) if counter is not None else None


def seen_reports(events: list[Event], reports: list[ContextReport], thresholds: tuple[float, float]) -> list[ContextReport]:
    """Reports read back from the log (resume), with the steps where the server acted shown as seen."""
    seen = {e.assistant.step: e.assistant.server for e in events
            if e.kind == "assistant" and e.assistant.step is not None and acted(e.assistant.server)}
    out = []
    for r in reports:
        record = seen.get(r.step)
        out.append(report_as_seen(r, record.seen_tokens, thresholds, describe(record))
                   if record is not None and record.seen_tokens else r)
    return out


@dataclass(frozen=True)
class Seen:
    """What the model saw of a step's request, when the server's edits made it less than was sent."""

    tokens: int  # provider tokens
    note: str  # the report's note saying why


class ServerContext:
    """The Agent's side of the server's context management (see the module doc): asked before a
    request is sent (`count`) and after its answer (`outcome`); what the model saw is returned as a
    `Seen` for the step runner to show in the step's report."""

    def __init__(self, session: Session, provider: Provider, calibrator: Calibrator, journal: Journal):
        self.session = session
        self.provider = provider
        self.calibrator = calibrator
        self.journal = journal
        self._count_off = False  # count_tokens failed once: not asked again this session

    def count(self, request: Request, calibrated_total: int) -> tuple[TokenCount | None, Seen | None]:
        """Ask the server what the model will see, where its edits may apply (a failure is reported once)."""
        if self._count_off or not worth_counting(request, calibrated_total):
            return None, None
        try:
            count = count_with(self.provider, request)
        except ProviderError as exc:
            self._count_off = True
            self.journal.notice(f"count_tokens failed ({exc}); the gauge shows what is sent until a response says "
                                "what the model saw", "warning")
            return None, None
        if count is not None and count.original_input_tokens and count.input_tokens < count.original_input_tokens:
            return count, Seen(count.input_tokens, f"the server counts {count.input_tokens:,} of "
                               f"{count.original_input_tokens:,} tokens after its context edits (count_tokens)")
        return count, None

    def outcome(self, request: Request, report_total: int, edits: ServerEdits | None,
                compaction: ServerCompaction | None, usage: Usage,
                count: TokenCount | None) -> tuple[ServerContextData | None, Seen | None]:
        """Log a server compaction, calibrate on the prompt as sent; returns the record for the
        assistant event, and what the model saw when the server acted."""
        record = server_record(self.session.config.strategy, request, edits, compaction, usage, count)
        if compaction is not None:
            data = compaction_event(self.session.log.events, compaction)
            if data is not None:
                self.journal.record(data)
                self.journal.emit(CompactionDone(data.first_id, data.last_id, data.method, report_total,
                                                 usage.prompt_tokens))
        target = calibration_target(record, usage)
        if target and report_total:
            self.calibrator.update(report_total, target)
        if record is not None and acted(record) and record.seen_tokens:
            return record, Seen(record.seen_tokens, describe(record))
        return record, None
