"""Fill the ContextReport for a build: slices, totals, calibration, loss, red flags, advice."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from ctxagent.context.history import MESSAGE_KINDS, Event
from ctxagent.context.monitor import advice_for, red_flags
from ctxagent.context.pins import live_events
from ctxagent.context.report import ContextReport
from ctxagent.context.request import Request
from ctxagent.context.tokens import MESSAGE_OVERHEAD, TokenCounter

if TYPE_CHECKING:
    from ctxagent.context.builder import BuildInputs
    from ctxagent.context.render import Draft


def event_tokens(ev: Event, counter: TokenCounter) -> int:
    """What an event costs verbatim (spilled results count their full original size)."""
    d = ev.data
    if ev.kind == "user":
        return MESSAGE_OVERHEAD + counter.count(str(d.get("text", "")))
    if ev.kind == "assistant":
        calls = d.get("tool_calls") or []
        args = sum(counter.count(json.dumps(c.get("arguments") or {}, ensure_ascii=False, sort_keys=True)) for c in calls)
        return MESSAGE_OVERHEAD + counter.count(str(d.get("text", "") or "")) + args + 4 * len(calls)
    if ev.kind == "tool_result":
        spill = d.get("spill") or (d.get("meta") or {}).get("spill")
        if isinstance(spill, dict) and isinstance(spill.get("tokens"), int):
            return MESSAGE_OVERHEAD + int(spill["tokens"])
        return MESSAGE_OVERHEAD + counter.count(str(d.get("content", "")))
    return 0


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


def make_report(
    inputs: BuildInputs,
    draft: Draft,
    request: Request,
    compaction: dict[str, Any] | None,
    notes: list[str],
    *,
    strategy: str = "ctxagent",
    system_in_window: bool = True,
) -> ContextReport:
    budget = inputs.budget
    tool_slots = [s for s in draft.slots if s.slice == "tools"]
    used = {
        "system": draft.fixed - draft.tool_spec_tokens,
        "hot": sum(s.tokens for s in draft.slots if s.slice == "hot"),
        "warm": draft.warm_tokens,
        "tools": draft.tool_spec_tokens + sum(s.tokens for s in tool_slots),
        "reserve": budget.reserve,
    }
    total = draft.total()
    ratio = inputs.calibration_ratio if inputs.calibration_ratio and inputs.calibration_ratio > 0 else 1.0
    calibrated = math.ceil(total * ratio)
    usage = round(100.0 * (calibrated + budget.reserve) / budget.window, 2)
    tool_results = sum(s.tokens for s in tool_slots)
    largest = max((s.tokens for s in tool_slots), default=0)
    flags = red_flags(total=total, tool_result_tokens=tool_results, largest_tool_result=largest,
                      messages=len(request.messages), window=budget.window)
    oldest = next((s.turn for s in draft.slots if s.msg.role == "user" and s.msg.kind == "message" and not s.is_tool_result), 0)
    verbatim = {s.event_id for s in draft.slots if s.state == "verbatim" and s.event_id is not None}
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
        oldest_visible_turn=oldest,
        messages=len(request.messages),
        spilled=sum(1 for s in draft.slots if s.spill is not None),
        pruned=sum(1 for s in draft.slots if s.state == "pruned"),
        compacted=[int(compaction["first_id"]), int(compaction["last_id"])] if compaction else None,
        loss_pct=loss_pct(list(inputs.events), verbatim, inputs.counter),
        red_flags=flags,
        advice=advice_for(usage, inputs.thresholds),
        strategy=strategy,
        summary_method=str(compaction["method"]) if compaction else None,
        notes=list(notes),
    )
