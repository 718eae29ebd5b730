"""One call of the replay: every strategy builds its request, and each request is measured.

Tokens are provider tokens: the local count × the ratio the product's Calibrator has at that call
(`CallContext.ratio`), or the usage the source reported (reference). A request overflows when that
size exceeds W. A build that raises `ContextOverflowError` sent nothing the model could use, so it
keeps nothing, yet it is no saving: it is counted as an overflow *at the size of the request that
would have had to be sent* — the strategy's own log built with no relief (its spills and earlier
compactions applied) — in tokens and in cost. Cost: cache_cost.py and prices.py; every call is
priced with its own model, and summarization calls are billed beside the requests: the server
emulations' at the main model, ctxagent's at the summary model (its input: the product's summary
prompt over what it summarizes; its output: the summary).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ctxagent.context.errors import ContextOverflowError
from ctxagent.context.events import CompactionData, ContextReportData
from ctxagent.context.history import item_id, view
from ctxagent.context.request import Request
from ctxagent.tui.lab.bench.cache_cost import real_cost, reported_bill
from ctxagent.tui.lab.bench.emulations import clear_tool_uses, grep_baseline, last2_names, server_compaction
from ctxagent.tui.lab.bench.metrics import prefix_reuse, retained
from ctxagent.tui.lab.bench.presence import PresenceIndex, request_texts
from ctxagent.tui.lab.bench.readers import Call, Trajectory
from ctxagent.tui.lab.bench.replay_setup import (
    BASELINE,
    GREP,
    REFERENCE_WINDOW,
    Lane,
    ReplayTotals,
    Setup,
)
from ctxagent.tui.lab.bench.replay_stats import StrategyStats
from ctxagent.tui.lab.bench.requirements import LineTracker
from ctxagent.tui.lab.bench.used_later import ATOM_KINDS, HistoryIndex, MessageFacts, handle_named


@dataclass
class CallContext:
    """What every strategy's request at one call is measured against."""

    call: Call
    facts: list[str]
    after: bool  # the original run compacted before this call
    early: list[str]
    names: list[str]  # every file name seen so far
    tracker: LineTracker
    presence: PresenceIndex
    used: list[tuple[str, str]]  # the distinctive strings the real agent used at this call (used_later.py)
    history: HistoryIndex
    message_facts: MessageFacts
    grep_lines: list[str]
    ratio: float  # the Calibrator's ratio at this call: local → provider tokens
    now: float | None
    model: str  # the model of this call
    weight: float  # its input price in main-model input tokens
    rules: Any  # the run's cache rules (its TTL)
    system: str  # the strategies' system prompt (with their stable prefix)
    ref_system: str  # the reference's
    step: int
    turn: int
    ref_local: float | None = None  # the reference request's local tokens from the fit pass (a cross-check)


@dataclass
class Measured:
    """One request, measured once: its blocks' keys and tokens, and (lazily) its text."""

    request: Request
    keys: list[Any]
    chunks: list[tuple[Any, int]]
    presence: PresenceIndex | None = None
    _texts: tuple[str, str] | None = field(default=None, repr=False)

    @property
    def local(self) -> int:
        return sum(n for _, n in self.chunks)

    @property
    def texts(self) -> tuple[str, str]:
        """(everything shown, the same without stub name lists and the names baseline's list)."""
        if self._texts is None:
            self._texts = (self.presence.request_texts(self.request.messages, self.keys) if self.presence is not None
                           else request_texts(self.request.messages))
        return self._texts


def measure(setup: Setup, request: Request, presence: PresenceIndex | None = None) -> Measured:
    chunks = setup.engine.meter.chunks(request)
    return Measured(request, [k for k, _ in chunks[2 + len(request.tools):]], chunks, presence)


def measure_call(traj: Trajectory, call: Call, ctx: CallContext, logs: dict[str, Lane], meters: dict[str, Lane],
                 ref: Lane, totals: ReplayTotals, setup: Setup, store: Any, recall: Any) -> None:
    totals.calls += 1
    totals.models[ctx.model] += 1
    if ctx.after:
        totals.after_calls += 1
    engine = setup.engine
    full: Request | None = None
    full_ms = 0.0
    if meters:
        raw = logs["raw"]
        t0 = time.perf_counter()
        full = engine.run(raw.events, ctx.system, "full", engine.window, ctx.step, ctx.turn, tools=setup.prefix.tools,
                          cache=raw.cache, model=ctx.model).request
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
                             tools=setup.prefix.tools, cache=raw.cache, model=ctx.model).request
        stats.build_ms.append((time.perf_counter() - t0) * 1000)
    elif name == BASELINE:
        request = last2_names(full, ctx.names)
    elif name == GREP:
        request = grep_baseline(full, ctx.grep_lines)
    elif name == "anthropic-clear":
        # the product's rule, in provider tokens (local count × the calibration ratio at this call)
        size = measure(setup, full).local * ctx.ratio
        request, cleared = clear_tool_uses(full, setup.server.clear_edit(engine.window), size,
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
                            tools=setup.prefix.tools, ratio=ctx.ratio, cache=lane.cache, model=ctx.model)
    except ContextOverflowError:
        stats.build_ms.append((time.perf_counter() - t0) * 1000)
        # nothing was sent; what would have had to be: its own log with no relief
        unrelieved = engine.run(lane.events, ctx.system, "full", REFERENCE_WINDOW, ctx.step, ctx.turn,
                                tools=setup.prefix.tools, cache=lane.cache, model=ctx.model).request
        _record(stats, lane, unrelieved, ctx, setup, failed=True)
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
        _bill_summary(stats, lane, planned.data, ctx, setup)
        lane.append(planned.data, expect_id=planned.event_id)
    # as the agent logs each step's build: the model it was for (the builder's cold-cache relief reads it)
    lane.append(ContextReportData(step=ctx.step, report={}, calibration_ratio=ctx.ratio, model=ctx.model))


def _bill_summary(stats: StrategyStats, lane: Lane, data: CompactionData, ctx: CallContext, setup: Setup) -> None:
    """ctxagent's summarization call for one compaction, as the product makes it by default: the summary
    prompt over the part it covers, asked of the summary model, the summary as its output."""
    from ctxagent.context.compact import summary_prompt

    counter = setup.engine.counter
    items = [it for it in view(lane.events) if data.first_id <= item_id(it) <= data.last_id]
    tokens_in = counter.count(summary_prompt(items)) * ctx.ratio if items else 0.0
    tokens_out = counter.count(data.summary) * ctx.ratio
    cost = setup.pricing.summarization(ctx.model, tokens_in, tokens_out)
    _charge_extra(stats, cost, ctx)
    stats.extra_tokens += tokens_in
    stats.extra_calls += 1
    stats.summary_output += tokens_out


def _charge_extra(stats: StrategyStats, cost: float, ctx: CallContext) -> None:
    stats.account.charge_extra(cost)
    if not ctx.rules.automatic:
        stats.account_last.charge_extra(cost)


def _server_compact(name: str, stats: StrategyStats, lane: Lane, ctx: CallContext, setup: Setup) -> None:
    from ctxagent.context.server_edits import compaction_due

    engine = setup.engine
    t0 = time.perf_counter()
    request = engine.run(lane.events, ctx.system, "full", engine.window, ctx.step, ctx.turn, tools=setup.prefix.tools,
                         cache=lane.cache, model=ctx.model).request
    size = measure(setup, request).local * ctx.ratio
    due = (compaction_due(int(size), setup.server.compact_edit(engine.window)) if name == "anthropic-compact"
           else size > setup.triggers[name])
    if due:
        record = server_compaction(lane.events, keep_users=name == "openai-compact")
        if record is not None:
            _record(stats, lane, request, ctx, setup, extra=True)  # the summarization iteration, billed
            out = engine.counter.count(record["summary"]) * ctx.ratio  # ... and the summary it writes
            _charge_extra(stats, out * setup.pricing.output_weight(ctx.model), ctx)
            stats.summary_output += out
            lane.append(CompactionData(**record))
            stats.compactions += 1
            request = engine.run(lane.events, ctx.system, "full", engine.window, ctx.step, ctx.turn,
                                 tools=setup.prefix.tools, cache=lane.cache, model=ctx.model).request
    stats.build_ms.append((time.perf_counter() - t0) * 1000)
    _record(stats, lane, request, ctx, setup)


def _reference(call: Call, ref: Lane, ctx: CallContext, totals: ReplayTotals, setup: Setup) -> None:
    """The original run's own view: measured locally for retention, priced by the same cache simulation as the
    strategies (with the source's own breakpoint on the last message) and, beside it, by its real bill."""
    engine = setup.engine
    result = engine.run(ref.events, ctx.ref_system, "full", REFERENCE_WINDOW, ctx.step, ctx.turn,
                        tools=setup.ref_prefix.tools, cache=ref.cache, model=ctx.model)
    m = measure(setup, result.request, ctx.presence)
    local = m.local
    if ctx.ref_local is not None and abs(ctx.ref_local - local) > 0.5:
        totals.notes["fit pass and replay counted a reference request differently"] += 1
    rstats = totals.reference
    tokens = float(call.reported) if call.reported else local * ctx.ratio
    scale = tokens / local if local else 1.0
    rstats.tokens.append(tokens)
    if tokens > engine.window:
        rstats.overflows += 1
    r = prefix_reuse(ref.prev_chunks, m.chunks)
    if r is not None:
        rstats.reuse.append(r)
    ref.prev_chunks = m.chunks
    ref.last = (scale, ctx.now, ctx.model, ctx.weight, ctx.rules)
    _count(rstats, m, ctx, ref)
    if ref.sim is not None:
        marks = [] if ctx.rules.automatic else engine.breakpoints.with_last_message(result.request)
        bill = ref.sim.step(m.chunks, marks, ctx.now, scale, ctx.model)
        rstats.account.charge(bill, ctx.rules, ctx.weight)
        if not ctx.rules.automatic:
            rstats.account_last.charge(bill, ctx.rules, ctx.weight)
    if call.reported and call.cached is not None:
        real = reported_bill(call.reported, call.cached, call.cache_write)
        if rstats.account_real is None:
            from ctxagent.tui.lab.bench.cache_cost import Account

            rstats.account_real = Account()
        rstats.account_real.charge(real, ctx.rules, ctx.weight, priced=real_cost(real, call.cache_write_1h, ctx.rules))


def reference_compaction(ref: Lane, summary: str, usage: dict[str, Any] | None, setup: Setup,
                         totals: ReplayTotals) -> None:
    """The source's own compaction call, billed like the strategies' summarizations: simulated as the last request
    plus the compaction prompt read through the reference's cache, the summary as output; and its real bill from
    the compaction call's reported usage when the transcript has it (its output from the summary's length)."""
    if ref.prev_chunks is None or ref.last is None or ref.sim is None:
        return
    scale, now, model, weight, rules = ref.last
    rstats = totals.reference
    prompt = 0.0
    if usage and usage.get("reported"):
        prompt = max(0.0, float(usage["reported"]) - sum(n for _, n in ref.prev_chunks) * scale) / max(scale, 1e-9)
    chunks = [*ref.prev_chunks, (("source-compaction-prompt",), int(round(prompt)))]
    marks = [] if rules.automatic else [len(chunks)]
    bill = ref.sim.step(chunks, marks, now, scale, model)
    out = setup.engine.counter.count(summary) * scale
    out_cost = out * setup.pricing.output_weight(model)
    rstats.account.charge(bill, rules, weight, extra=True)
    rstats.account.charge_extra(out_cost)
    if not rules.automatic:
        rstats.account_last.charge(bill, rules, weight, extra=True)
        rstats.account_last.charge_extra(out_cost)
    rstats.extra_tokens += bill.total
    rstats.extra_calls += 1
    rstats.summary_output += out
    if usage and usage.get("reported") and rstats.account_real is not None:
        real = reported_bill(int(usage["reported"]), usage.get("cached"), usage.get("written"))
        rstats.account_real.charge(real, rules, weight, priced=real_cost(real, usage.get("written_1h"), rules), extra=True)
        rstats.account_real.charge_extra(out_cost)


def _count(stats: StrategyStats, m: Measured | None, ctx: CallContext, lane: Lane) -> None:
    lines = ctx.tracker.lines
    present = ctx.presence.present(m.request.messages, lines, m.keys) if m is not None else set()
    req_idx = [i for i, ln in enumerate(lines) if ln.kind == "requirement"]
    dec_idx = [i for i, ln in enumerate(lines) if ln.kind == "decision"]
    stats.requirements.add(lines, present, req_idx, ctx.after)
    stats.decisions.add(lines, present, dec_idx, ctx.after)
    _used_later(stats, m, ctx, lane)
    if not ctx.facts:
        return
    shown, bare = m.texts if m is not None else ("", "")
    kept = retained(ctx.facts, shown)
    stats.facts += len(ctx.facts)
    stats.retained += kept
    stats.retained_bare += retained(ctx.facts, bare)
    if ctx.after:
        stats.facts_after += len(ctx.facts)
        stats.retained_after += kept
        stats.facts_early += len(ctx.early)
        stats.retained_early += retained(ctx.early, shown)


def _used_later(stats: StrategyStats, m: Measured | None, ctx: CallContext, lane: Lane) -> None:
    """Which of the strings the real agent used at this call the request holds; for a lane that maps the source's
    events to its own (ctxagent), where the missing ones went."""
    if not ctx.used:
        return
    if m is None:
        stats.used.add(ctx.used, [False] * len(ctx.used), ctx.after)
        stats.used.failed += len(ctx.used)
        return
    facts = ctx.message_facts
    msgs = m.request.messages
    keys = [m.chunks[1][0], *m.keys]  # the system prompt's block, then the messages
    items = [m.request.system, *msgs]
    lane.atoms.update(keys, items, facts)
    joined = None
    kept: list[bool] = []
    for kind, s in ctx.used:
        if kind in ATOM_KINDS:
            ok = s in lane.atoms.counts
        else:
            if joined is None:
                joined = "\n".join(facts.text(k, x) for k, x in zip(keys, items, strict=True))
            ok = s in joined
        kept.append(ok)
    stats.used.add(ctx.used, kept, ctx.after)
    if lane.source_ids is None or all(kept):
        return
    ids: set[int] = set()
    ranges: list[tuple[int, int]] = []
    handles: set[str] = set()
    for k, msg in zip(m.keys, msgs, strict=True):
        i, r, h = facts.handles(k, msg)
        ids |= i
        ranges += r
        handles |= h
    for (kind, s), ok in zip(ctx.used, kept, strict=True):
        if ok:
            continue
        if handle_named(ctx.history.holders(kind, s), lane.source_ids, lane.spills, (ids, ranges, handles)):
            stats.used.behind_handle += 1
        else:
            stats.used.gone += 1


def _record(stats: StrategyStats, lane: Lane, request: Request, ctx: CallContext, setup: Setup,
            extra: bool = False, failed: bool = False) -> None:
    engine = setup.engine
    m = measure(setup, request, ctx.presence)
    tokens = m.local * ctx.ratio
    if lane.sim is not None and lane.sim_last is not None:
        product = [] if ctx.rules.automatic else engine.breakpoints.product(request)
        stats.account.charge(lane.sim.step(m.chunks, product, ctx.now, ctx.ratio, ctx.model), ctx.rules, ctx.weight,
                             extra=extra)
        if not ctx.rules.automatic:
            bill = lane.sim_last.step(m.chunks, engine.breakpoints.with_last_message(request, product), ctx.now,
                                      ctx.ratio, ctx.model)
            stats.account_last.charge(bill, ctx.rules, ctx.weight, extra=extra)
    if extra:
        stats.extra_tokens += tokens
        stats.extra_calls += 1
        lane.prev_chunks = m.chunks
        return
    stats.tokens.append(tokens)
    if failed:
        stats.overflows += 1
        stats.failed_builds += 1
        lane.prev_chunks = None
        _count(stats, None, ctx, lane)
        return
    if tokens > engine.window:
        stats.overflows += 1
    r = prefix_reuse(lane.prev_chunks, m.chunks)
    if r is not None:
        stats.reuse.append(r)
    lane.prev_chunks = m.chunks
    _count(stats, m, ctx, lane)
