"""Fill the ContextReport for a build: slices, totals, calibration, loss, red flags, advice."""

from __future__ import annotations

import math

from ctxagent.context.builder.cache import BuildCache, event_tokens
from ctxagent.context.builder.inputs import CUT_STATES, BuildInputs, Draft
from ctxagent.context.events import CompactionData
from ctxagent.context.history import MESSAGE_KINDS, Event
from ctxagent.context.monitor import advice_for, red_flags
from ctxagent.context.pins import live_events
from ctxagent.context.report import ContextReport
from ctxagent.context.request import Request
from ctxagent.context.tokens import TokenCounter

__all__ = ["event_tokens", "loss_pct", "make_report"]

def loss_pct(events: list[Event], verbatim_ids: set[int], counter: TokenCounter) -> float:
    """Share of the (non-rewound) history's tokens not shown verbatim: pruned, spilled or compacted."""
    total = shown = 0
    for ev in live_events(events):
        if ev.kind not in MESSAGE_KINDS:
            continue
        n = event_tokens(ev, counter)
        total += n
        if ev.id in verbatim_ids:
            shown += n
    return round(100.0 * (total - shown) / total, 2) if total else 0.0


def _loss_from_cache(inputs: BuildInputs, draft: Draft, cache: BuildCache) -> float:
    """loss_pct in O(visible messages): the history's verbatim total is kept by the cache's log
    snapshot, and each verbatim slot carries its event's verbatim size."""
    total = cache.log_state(list(inputs.events)).live_tokens
    shown = sum(s.full_tokens for s in draft.slots if s.state == "verbatim" and s.event_id is not None)
    return round(100.0 * (total - shown) / total, 2) if total else 0.0


def make_report(
    inputs: BuildInputs,
    draft: Draft,
    request: Request,
    compaction: CompactionData | None,
    notes: list[str],
    *,
    strategy: str = "ctxagent",
    system_in_window: bool = True,
    cache: BuildCache | None = None,
) -> ContextReport:
    budget = inputs.budget
    hot = tools = largest = spilled = pruned = 0
    oldest: int | None = None
    for s in draft.slots:  # one pass: a build's report costs O(visible messages)
        if s.slice == "tools":
            tools += s.tokens
            largest = max(largest, s.tokens)
        elif s.slice == "hot":
            hot += s.tokens
        if s.spill is not None:
            spilled += 1
        if s.state in CUT_STATES:
            pruned += 1
        if oldest is None and s.msg.role == "user" and s.msg.kind == "message" and not s.is_tool_result:
            oldest = s.turn
    used = {
        "system": draft.fixed - draft.tool_spec_tokens,
        "hot": hot,
        "warm": draft.warm_tokens,
        "tools": draft.tool_spec_tokens + tools,
        "reserve": budget.reserve,
    }
    total = draft.total()
    ratio = inputs.calibration_ratio if inputs.calibration_ratio and inputs.calibration_ratio > 0 else 1.0
    calibrated = math.ceil(total * ratio)
    usage = round(100.0 * (calibrated + budget.reserve) / budget.window, 2)
    flags = red_flags(total=total, tool_result_tokens=tools, largest_tool_result=largest,
                      messages=len(request.messages), window=budget.window,
                      used=used, shares={name: budget.base(name) for name in used}, ratio=ratio)
    if cache is not None:
        loss = _loss_from_cache(inputs, draft, cache)
    else:
        verbatim = {s.event_id for s in draft.slots if s.state == "verbatim" and s.event_id is not None}
        loss = loss_pct(list(inputs.events), verbatim, inputs.counter)
    return ContextReport(
        step=inputs.step,
        turn=inputs.turn,
        window=budget.window,
        budget=budget.slices(used),
        used=used,
        total=total,
        usage_pct=usage,
        calibrated_total=calibrated,
        calibration_ratio=round(ratio, 4),
        system_in_window=system_in_window,
        oldest_visible_turn=oldest or 0,
        messages=len(request.messages),
        spilled=spilled,
        pruned=pruned,
        compacted=[compaction.first_id, compaction.last_id] if compaction else None,
        loss_pct=loss,
        red_flags=flags,
        advice=advice_for(usage, inputs.thresholds),
        strategy=strategy,
        summary_method=compaction.method if compaction else None,
        notes=list(notes),
    )
