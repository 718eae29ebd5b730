"""Fill the ContextReport for a build: slices, totals, calibration, loss, red flags, advice."""

from __future__ import annotations

import math

from ctxagent.context.builder.cache import BuildCache, event_tokens
from ctxagent.context.builder.inputs import BuildInputs, Draft
from ctxagent.context.builder.slot_fold import SlotFold, fold_slots
from ctxagent.context.events import CompactionData
from ctxagent.context.history import MESSAGE_KINDS, Event
from ctxagent.context.monitor import advice_for, red_flags
from ctxagent.context.pins import live_events
from ctxagent.context.report import ContextReport
from ctxagent.context.request import Request, ToolSpec
from ctxagent.context.tokens import TokenCounter, count_tool_spec

__all__ = ["event_tokens", "loss_pct", "make_report", "schema_rows"]

MCP_PREFIX = "mcp__"  # agent/mcp/config.py names MCP tools mcp__<server>__<tool>
SEARCH_TOOLS = "search_tools"  # the tool MCP tools are deferred behind (agent/mcp/catalog.py)


def _has_mcp(tools: list[ToolSpec]) -> bool:
    """Only a session with MCP tools gets the rows (every other report stays as it was)."""
    return any(t.name.startswith(MCP_PREFIX) or t.name == SEARCH_TOOLS for t in tools)


def schema_rows(tools: list[ToolSpec], counter: TokenCounter) -> dict[str, int]:
    """Schema tokens by who offers the tool: built-in, each MCP server, search_tools."""
    rows: dict[str, int] = {}
    for spec in tools:
        rest = spec.name[len(MCP_PREFIX):] if spec.name.startswith(MCP_PREFIX) else ""
        row = rest.split("__", 1)[0] if "__" in rest else SEARCH_TOOLS if spec.name == SEARCH_TOOLS else "built-in"
        rows[row] = rows.get(row, 0) + count_tool_spec(spec, counter)
    return rows

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


def _loss_from_cache(inputs: BuildInputs, fold: SlotFold, cache: BuildCache) -> float:
    """loss_pct in O(new messages): the history's verbatim total is kept by the cache's log snapshot,
    and the slots' fold (each verbatim slot carries its event's verbatim size) by the cache's folds."""
    total = cache.log_state(inputs.events).live_tokens
    shown = fold.verbatim_full
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
    fold: SlotFold | None = None,
) -> ContextReport:
    """The report of a build. `fold`: its slots' fold (slot_fold.py), when the caller has it; else it
    is folded here, from the cache's folds if there is a cache."""
    budget = inputs.budget
    fold = fold if fold is not None else fold_slots(draft.slots, cache)
    hot, tools, largest, spilled, pruned, oldest = fold.hot, fold.tools, fold.largest, fold.spilled, fold.cut, fold.oldest_turn
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
        loss = _loss_from_cache(inputs, fold, cache)
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
        schema_tokens=schema_rows(inputs.tools, inputs.counter) if _has_mcp(inputs.tools) else {},
    )
