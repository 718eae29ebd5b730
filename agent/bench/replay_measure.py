"""One call of the replay: every strategy builds its request, and each request is measured.

Tokens are provider tokens: the local count × the ratio the product's Calibrator has at that call
(`CallContext.ratio`, fed every earlier call's reference count and reported usage), or the usage the
source reported (reference). A request overflows when that size exceeds W. Cost: cache_cost.py.
"""

from __future__ import annotations

import time
from typing import Any

from ctxagent.agent.bench.cache_cost import reported_bill
from ctxagent.agent.bench.emulations import clear_tool_uses, last2_names, server_compaction
from ctxagent.agent.bench.metrics import prefix_reuse, retained
from ctxagent.agent.bench.presence import request_texts
from ctxagent.agent.bench.readers import Call, Trajectory
from ctxagent.agent.bench.replay_setup import (
    BASELINE,
    REFERENCE_WINDOW,
    CallContext,
    Lane,
    ReplayTotals,
    Setup,
)
from ctxagent.agent.bench.replay_stats import StrategyStats
from ctxagent.context.errors import ContextOverflowError
from ctxagent.context.request import Request
from ctxagent.context.server_edits import compaction_due


def measure_call(traj: Trajectory, call: Call, ctx: CallContext, logs: dict[str, Lane], meters: dict[str, Lane],
                  ref: Lane, totals: ReplayTotals, setup: Setup, store: Any, recall: Any) -> None:
    totals.calls += 1
    if ctx.after:
        totals.after_calls += 1
    engine = setup.engine
    full: Request | None = None
    full_ms = 0.0
    if meters:
        raw = logs["raw"]
        t0 = time.perf_counter()
        full = engine.run(raw.events, ctx.system, "full", engine.window, ctx.step, ctx.turn, tools=setup.prefix.tools,
                          cache=raw.cache).request
        full_ms = (time.perf_counter() - t0) * 1000
    for name in setup.strategies:
        stats = totals.strategies[name]
        if name == "ctxagent":
            _ctxagent(stats, logs[name], ctx, setup, traj, store, recall)
        elif name in ("anthropic-compact", "openai-compact"):
            _server_compact(name, stats, logs[name], ctx, setup)
        elif full is not None:
            _raw_strategy(name, stats, meters[name], full, full_ms, logs["raw"], ctx, setup)
    _reference(call, ref, ctx, totals, setup)


def _raw_strategy(name: str, stats: StrategyStats, lane: Lane, full: Request, full_ms: float, raw: Lane,
                  ctx: CallContext, setup: Setup) -> None:
    engine = setup.engine
    request = full
    if name == "full":
        stats.build_ms.append(full_ms)
    elif name == "window":
        t0 = time.perf_counter()
        request = engine.run(raw.events, ctx.system, "window", engine.window, ctx.step, ctx.turn,
                             tools=setup.prefix.tools, cache=raw.cache).request
        stats.build_ms.append((time.perf_counter() - t0) * 1000)
    elif name == BASELINE:
        request = last2_names(full, ctx.names)
    elif name == "anthropic-clear":
        # the product's rule, in provider tokens (local count × the calibration ratio at this call)
        request, cleared = clear_tool_uses(full, setup.server.clear_edit(engine.window), ctx.size(engine, full),
                                           lambda text: engine.counter.count(text) * ctx.ratio)
        stats.prunes += len(cleared - lane.pruned)  # each result counted once, the first time it is cleared
        lane.pruned |= cleared
    _record(stats, lane, request, ctx, setup)


def _ctxagent(stats: StrategyStats, lane: Lane, ctx: CallContext, setup: Setup, traj: Trajectory, store: Any,
              recall: Any) -> None:
    engine = setup.engine
    warm = None
    if store is not None:
        new = lane.events[lane.ingested:]
        if new:
            store.ingest(new, traj.run_id)
            lane.ingested = len(lane.events)
        warm = recall
    t0 = time.perf_counter()
    try:
        result = engine.run(lane.events, ctx.system, "ctxagent", engine.window, ctx.step, ctx.turn, warm,
                            tools=setup.prefix.tools, ratio=ctx.ratio, cache=lane.cache)
    except ContextOverflowError:
        stats.overflows += 1
        stats.build_ms.append((time.perf_counter() - t0) * 1000)
        _record_nothing(stats, ctx)
        lane.prev_chunks = None
        return
    stats.build_ms.append((time.perf_counter() - t0) * 1000)
    _record(stats, lane, result.request, ctx, setup)
    pruned_ids = getattr(result, "pruned_ids", None)
    if pruned_ids is not None:
        fresh = set(pruned_ids) - lane.pruned
        lane.pruned |= fresh
        stats.prunes += len(fresh)  # each message counted once, the first time it is pruned
    for planned in result.compactions:
        stats.compactions += 1
        lane.append("compaction", planned.data.to_data())


def _server_compact(name: str, stats: StrategyStats, lane: Lane, ctx: CallContext, setup: Setup) -> None:
    engine = setup.engine
    t0 = time.perf_counter()
    request = engine.run(lane.events, ctx.system, "full", engine.window, ctx.step, ctx.turn, tools=setup.prefix.tools,
                         cache=lane.cache).request
    due = (compaction_due(int(ctx.size(engine, request)), setup.server.compact_edit(engine.window)) if name == "anthropic-compact"
           else ctx.size(engine, request) > setup.triggers[name])
    if due:
        record = server_compaction(lane.events, keep_users=name == "openai-compact")
        if record is not None:
            _record(stats, lane, request, ctx, setup, extra=True)  # the summarization iteration, billed
            lane.append("compaction", record)
            stats.compactions += 1
            request = engine.run(lane.events, ctx.system, "full", engine.window, ctx.step, ctx.turn,
                                 tools=setup.prefix.tools, cache=lane.cache).request
    stats.build_ms.append((time.perf_counter() - t0) * 1000)
    _record(stats, lane, request, ctx, setup)


def _reference(call: Call, ref: Lane, ctx: CallContext, totals: ReplayTotals, setup: Setup) -> None:
    """The original run's own view: measured locally for retention, priced by its own usage report."""
    engine = setup.engine
    result = engine.run(ref.events, ctx.ref_system, "full", REFERENCE_WINDOW, ctx.step, ctx.turn,
                        tools=setup.ref_prefix.tools,
                        cache=ref.cache)
    chunks = engine.meter.chunks(result.request)
    local = sum(n for _, n in chunks)
    rstats = totals.reference
    tokens = float(call.reported) if call.reported else local * ctx.ratio
    rstats.tokens.append(tokens)
    if tokens > engine.window:
        rstats.overflows += 1
    r = prefix_reuse(ref.prev_chunks, chunks)
    if r is not None:
        rstats.reuse.append(r)
    ref.prev_chunks = chunks
    _count(rstats, result.request, ctx)
    if call.reported and call.cached is not None:
        rstats.bill.add(reported_bill(call.reported, call.cached, call.cache_write))
        rstats.billed_real = True
    elif ref.sim is not None:  # no usage report: its own view under the same cache rules (breakpoint on the last message)
        marks = [] if setup.rules.automatic else engine.breakpoints.with_last_message(result.request)
        rstats.bill.add(ref.sim.step(chunks, marks, ctx.now, tokens / local if local else 1.0))
    setup.calibrator.update(int(local), call.reported)


def _count(stats: StrategyStats, request: Request | None, ctx: CallContext) -> None:
    lines = ctx.tracker.lines
    present = ctx.presence.present(request.messages, lines) if request is not None else set()
    req_idx = [i for i, ln in enumerate(lines) if ln.kind == "requirement"]
    dec_idx = [i for i, ln in enumerate(lines) if ln.kind == "decision"]
    stats.requirements.add(lines, present, req_idx, ctx.after)
    stats.decisions.add(lines, present, dec_idx, ctx.after)
    if not ctx.facts:
        return
    shown, bare = request_texts(request.messages) if request is not None else ("", "")
    kept = retained(ctx.facts, shown)
    stats.facts += len(ctx.facts)
    stats.retained += kept
    stats.retained_bare += retained(ctx.facts, bare)
    if ctx.after:
        stats.facts_after += len(ctx.facts)
        stats.retained_after += kept
        stats.facts_early += len(ctx.early)
        stats.retained_early += retained(ctx.early, shown)


def _record_nothing(stats: StrategyStats, ctx: CallContext) -> None:
    """A call the strategy could not build: nothing was sent, nothing was kept."""
    _count(stats, None, ctx)


def _record(stats: StrategyStats, lane: Lane, request: Request, ctx: CallContext, setup: Setup,
            extra: bool = False) -> None:
    engine = setup.engine
    chunks = engine.meter.chunks(request)
    local = sum(n for _, n in chunks)
    tokens = local * ctx.ratio
    if lane.sim is not None and lane.sim_last is not None:
        product = [] if setup.rules.automatic else engine.breakpoints.product(request)
        stats.bill.add(lane.sim.step(chunks, product, ctx.now, ctx.ratio))
        if not setup.rules.automatic:
            stats.bill_last.add(lane.sim_last.step(chunks, engine.breakpoints.with_last_message(request), ctx.now,
                                                   ctx.ratio))
    if extra:
        stats.extra_tokens += tokens
        stats.extra_calls += 1
        lane.prev_chunks = chunks
        return
    stats.tokens.append(tokens)
    if tokens > engine.window:
        stats.overflows += 1
    r = prefix_reuse(lane.prev_chunks, chunks)
    if r is not None:
        stats.reuse.append(r)
    lane.prev_chunks = chunks
    _count(stats, request, ctx)


