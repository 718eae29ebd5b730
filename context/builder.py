"""THE builder: a pure function from the session log (and hooks) to a provider-neutral request + report.

Called before every model call inside the tool loop. Layout, for prompt-cache stability and for
attention:
  1. system prompt (+ project instructions) and tool schemas — the stable prefix;
  2. history: compaction summaries in place of masked ranges, tool results as "tool" messages;
  3. the warm block (pinned constraints, open tasks, recalled memory) right before the newest user
     message, or after the trailing tool results.
Pressure relief, cheapest first, re-measuring after each cut and stopping as soon as it fits:
prune old tool results (view only) → compact the oldest turns (summary; the caller appends the
returned compaction event, originals stay in the log) → prune recent tool results → a clear
ContextOverflowError. Invariant (strategy "ctxagent"): count_request(request) ≤ budget.limit, and
the calibrated total fits as well. Same inputs → identical request (inspect compares a sha256).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ctxagent.context.budget import Budget
from ctxagent.context.compact import compaction_record, user_positions
from ctxagent.context.errors import ContextOverflowError
from ctxagent.context.history import Event, Summary, view
from ctxagent.context.measure import make_report
from ctxagent.context.pins import SessionPins, live_events
from ctxagent.context.prune import PruneCandidate, prune_order, pruned_text
from ctxagent.context.render import Draft, assemble, warm_position, with_content
from ctxagent.context.report import ContextReport
from ctxagent.context.request import Request, ToolSpec
from ctxagent.context.tokens import TokenCounter, count_message

MAX_COMPACTIONS_PER_BUILD = 3
MODEL_SUMMARY_ESTIMATE = 800  # tokens a model summary is assumed to take when choosing a range


class WarmProvider(Protocol):
    def warm_block(self, query: str, files: list[str], turn: int, max_tokens: int, counter: TokenCounter) -> str: ...


@dataclass
class BuildInputs:
    events: list[Event]  # the whole session log so far (view() applied inside)
    system: str  # system prompt incl. project instructions
    tools: list[ToolSpec]
    budget: Budget
    counter: TokenCounter  # a CachedCounter
    step: int
    turn: int
    strategy: str = "ctxagent"  # "ctxagent" | "full" | "window"
    calibration_ratio: float = 1.0
    warm: WarmProvider | None = None  # memory hook; None = SessionPins from the log
    warm_override: str | None = None  # exact warm text to use (inspect re-builds with it)
    summarize: Callable[[str], str] | None = None  # model call for compaction; None = extractive
    allow_compaction: bool = True
    protect_turns: int = 2
    thresholds: tuple[float, float] = (0.75, 0.90)
    focus: str | None = None


@dataclass
class BuildResult:
    request: Request
    report: ContextReport
    warm_text: str  # the warm block as sent ("" if none)
    compaction: dict[str, Any] | None  # a compaction event's data to APPEND to the log
    pruned_ids: list[int] = field(default_factory=list)
    spilled_ids: list[int] = field(default_factory=list)
    masked: list[list[int]] = field(default_factory=list)


def request_sha256(body: dict[str, Any]) -> str:
    """A stable fingerprint of a request body (Request.to_dict() or a provider's wire body)."""
    data = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


def _recent_files(events: list[Event], limit: int = 10) -> list[str]:
    files: list[str] = []
    for ev in reversed(events):
        if ev.kind == "tool_result":
            files += [str(f) for f in (ev.data.get("meta") or {}).get("files") or []]
        elif ev.kind == "assistant":
            for call in ev.data.get("tool_calls") or []:
                path = (call.get("arguments") or {}).get("path")
                if isinstance(path, str):
                    files.append(path)
        if len(dict.fromkeys(files)) >= limit:
            break
    return list(dict.fromkeys(files))[:limit]


def warm_text_for(inputs: BuildInputs, events: list[Event]) -> tuple[str, str | None]:
    """(warm block text, note). A failing memory hook falls back to the session pins and says so."""
    if inputs.warm_override is not None:
        return inputs.warm_override, None
    query = next((str(e.data.get("text", "")) for e in reversed(events) if e.kind == "user"), "")
    max_tokens = inputs.budget.base("warm")
    note = None
    if inputs.warm is not None:
        try:
            return inputs.warm.warm_block(query, _recent_files(events), inputs.turn, max_tokens, inputs.counter), None
        except Exception as exc:  # memory trouble must not stop a step
            note = f"warm provider failed ({type(exc).__name__}: {exc}); used session pins"
    return SessionPins(events).warm_block(query, [], inputs.turn, max_tokens, inputs.counter), note


def _prune(draft: Draft, candidates: list[PruneCandidate], counter: TokenCounter, limit: int) -> None:
    for cand in prune_order(candidates):
        if draft.total() <= limit:
            return
        slot = draft.slots[cand.index]
        new_msg = with_content(slot.msg, pruned_text(slot.source, counter, slot.event_id, slot.spill))
        new_tokens = count_message(new_msg, counter)
        if new_tokens < slot.tokens:
            draft.replace(cand.index, new_msg, new_tokens, "pruned")


def _tool_candidates(draft: Draft, *, old_only: bool) -> list[PruneCandidate]:
    out: list[PruneCandidate] = []
    last_step = draft.last_step_start()
    for i, slot in enumerate(draft.slots):
        if not slot.is_tool_result or slot.state == "pruned" or slot.event_id is None:
            continue
        if old_only and i >= draft.protect_from:
            continue
        # in the second pass the newest step's results (what the model is about to read) go last
        rank = slot.rank + (10 if (not old_only and i >= last_step) else 0)
        out.append(PruneCandidate(i, slot.event_id, rank))
    return out


def _choose_compaction_end(draft: Draft, inputs: BuildInputs, limit: int) -> int | None:
    """Index in draft.items where the compacted range ends (a user message that stays visible)."""
    users = user_positions(draft.items)
    if not users:
        return None
    newest = users[-1]
    protect = max(1, inputs.protect_turns)
    boundary = users[-protect] if len(users) >= protect else users[0]
    ends = [u for u in users if u >= boundary and u > 0]
    if not ends:
        return None
    total = draft.total()
    best: int | None = None
    for end in ends:
        covered = draft.tokens_before_item(end)
        chosen = draft.items[:end]
        if not chosen or (len(chosen) == 1 and isinstance(chosen[0], Summary)):
            continue
        estimate = MODEL_SUMMARY_ESTIMATE if inputs.summarize else max(64, covered // 20)
        if covered - estimate <= 0:
            continue
        best = end
        if total - covered + estimate <= limit:
            return end
    return best if best is not None and best <= newest else None


def _finish(inputs: BuildInputs, draft: Draft, warm: str, compaction: dict[str, Any] | None, notes: list[str]) -> BuildResult:
    messages = [s.msg for s in draft.slots]
    if draft.warm_msg is not None:
        messages.insert(warm_position(messages), draft.warm_msg)
    request = Request(system=inputs.system, messages=messages, tools=list(inputs.tools), max_tokens=inputs.budget.max_output)
    report = make_report(inputs, draft, request, compaction, notes)
    masked = [[it.first_id, it.last_id] for it in draft.items if isinstance(it, Summary)]
    return BuildResult(
        request=request,
        report=report,
        warm_text=warm,
        compaction=compaction,
        pruned_ids=[s.msg.event_id for s in draft.slots if s.state == "pruned" and s.msg.event_id is not None],
        spilled_ids=[s.event_id for s in draft.slots if s.spill is not None and s.event_id is not None],
        masked=masked,
    )


def build(inputs: BuildInputs) -> BuildResult:
    if inputs.strategy in ("full", "window"):
        from ctxagent.context.strategies import build_baseline  # the baselines reuse this module's types

        return build_baseline(inputs)
    if inputs.strategy != "ctxagent":
        raise ValueError(f"unknown strategy {inputs.strategy!r}: use 'ctxagent', 'full' or 'window'")
    counter = inputs.counter
    limit = inputs.budget.effective_limit(inputs.calibration_ratio)
    events = list(inputs.events)
    notes: list[str] = []
    warm, note = warm_text_for(inputs, live_events(events))
    if note:
        notes.append(note)
    compaction: dict[str, Any] | None = None

    draft = assemble(view(events), inputs, warm)
    _prune(draft, _tool_candidates(draft, old_only=True), counter, limit)
    next_id = (events[-1].id + 1) if events else 0
    rounds = 0
    while draft.total() > limit and inputs.allow_compaction and rounds < MAX_COMPACTIONS_PER_BUILD:
        end = _choose_compaction_end(draft, inputs, limit)
        if end is None:
            break
        record = compaction_record(draft.items, end, inputs.summarize, inputs.focus)
        if record is None:
            break
        rounds += 1
        if record.get("note"):
            notes.append(str(record["note"]))
        # A further round compacts a range starting at this one's first id, so it swallows it: only
        # the last record is returned (and appended), and the view below is exactly what a later
        # re-build from the log with that one event appended will see.
        compaction = record
        current = [*events, Event(next_id, "compaction", dict(record))]
        if inputs.warm_override is None and inputs.warm is None:
            warm, _ = warm_text_for(inputs, live_events(current))
        draft = assemble(view(current), inputs, warm)
        _prune(draft, _tool_candidates(draft, old_only=True), counter, limit)
    if draft.total() > limit:
        _prune(draft, _tool_candidates(draft, old_only=False), counter, limit)
    if draft.total() > limit:
        raise ContextOverflowError(draft.overflow_message(limit, inputs.budget))
    return _finish(inputs, draft, warm, compaction, notes)
