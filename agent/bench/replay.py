"""Replay real trajectories through the context builder, per strategy, at every original model call.

Each strategy keeps its own copy of the session log (a list of `Event`), fed the source's events in
order. Before each event that was a model call in the original run, every strategy builds the
request it would have sent, and we measure it (see metrics.py for the definitions):

- `full` and `window`: the builder's baselines on the raw events;
- `ctxagent`: tool results pass through the spill store before entering its log (as in the agent
  loop), the memory store ingests its events and recalls into the warm block, and a compaction the
  builder returns is appended as a `compaction` event so later calls see it;
- `reference`: the original run as it happened — the raw events, plus the source's own compaction
  (Claude Code) as a compaction event whose summary is the real one. Its tokens are the reported
  prompt tokens converted to local units with the affine fit (local counts when a source has none).
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxagent.agent.bench.metrics import (
    FactTracker,
    Fit,
    fit_affine,
    mean,
    percentile,
    prefix_reuse,
    retained,
)
from ctxagent.agent.bench.readers import SourceEvent, Trajectory
from ctxagent.agent.bench.request_meter import RequestMeter, context_text
from ctxagent.context.errors import ContextOverflowError
from ctxagent.context.history import Event
from ctxagent.context.request import Request

STRATEGIES = ("full", "window", "ctxagent")
REFERENCE_WINDOW = 1_000_000_000  # the reference view is measured, never trimmed
SPILL_TOKENS = 2000


# -- per-strategy accumulation -------------------------------------------------------------------
@dataclass
class StrategyStats:
    tokens: list[float] = field(default_factory=list)
    reuse: list[float] = field(default_factory=list)
    build_ms: list[float] = field(default_factory=list)
    overflows: int = 0
    facts: int = 0
    retained: int = 0
    spills: int = 0
    prunes: int = 0
    compactions: int = 0
    facts_after: int = 0  # facts at calls after the source's first compaction (Claude Code)
    retained_after: int = 0
    facts_early: int = 0  # of those, facts last mentioned at or before that compaction
    retained_early: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens_sum": int(round(sum(self.tokens))),
            "tokens_mean": round(mean(self.tokens), 1),
            "tokens_p95": round(percentile(self.tokens, 95), 1),
            "prefix_reuse": round(mean(self.reuse), 4) if self.reuse else None,
            "overflows": self.overflows,
            "retention": round(self.retained / self.facts, 4) if self.facts else None,
            "build_ms_p50": round(percentile(self.build_ms, 50), 3) if self.build_ms else None,
            "build_ms_p95": round(percentile(self.build_ms, 95), 3) if self.build_ms else None,
            "spills": self.spills,
            "prunes": self.prunes,
            "compactions": self.compactions,
        }


@dataclass
class Lane:
    """One strategy's private log and the state its measures need between calls."""

    name: str
    events: list[Event] = field(default_factory=list)
    prev_chunks: list[tuple[Any, int]] | None = None
    ingested: int = 0
    pruned: set[int] = field(default_factory=set)

    def append(self, kind: str, data: dict[str, Any]) -> Event:
        ev = Event(len(self.events), kind, data)
        self.events.append(ev)
        return ev


@dataclass
class ReferenceCall:
    reported: int | None
    local: float  # local tokens of the reference view
    before_compaction: bool


@dataclass
class Engine:
    """What the replay needs from the context engine, bound once per run."""

    counter: Any
    window: int
    build: Callable[..., Any]
    budget_cls: Any
    build_inputs_cls: Any
    meter: RequestMeter = field(init=False)

    def __post_init__(self) -> None:
        self.meter = RequestMeter(self.counter)

    @classmethod
    def load(cls, window: int, encoding: str = "o200k_base") -> Engine:
        from ctxagent.context.budget import Budget
        from ctxagent.context.builder import BuildInputs, build
        from ctxagent.context.tokens import CachedCounter, get_counter

        return cls(CachedCounter(get_counter(encoding), max_entries=200_000), window, build, Budget, BuildInputs)

    def run(self, events: list[Event], system: str, strategy: str, window: int, step: int, turn: int,
            warm: Any = None) -> Any:
        budget = self.budget_cls(window=window, max_output=min(8192, max(256, window // 4)))
        inputs = self.build_inputs_cls(events=events, system=system, tools=[], budget=budget, counter=self.counter,
                                       step=step, turn=turn, strategy=strategy, warm=warm)
        return self.build(inputs)


def _memory_for(tmp: Path, session: str) -> tuple[Any, Any]:
    """A fresh memory store and its recall hook, or (None, None) if the memory layer is missing."""
    try:
        from ctxagent.context.memory.recall import MemoryRecall
        from ctxagent.context.memory.store import MemoryStore
    except ImportError:
        return None, None
    store = MemoryStore.open(tmp / "memory.db")
    return store, MemoryRecall(store, session)


# -- one trajectory ------------------------------------------------------------------------------
@dataclass
class ReplayTotals:
    strategies: dict[str, StrategyStats] = field(default_factory=lambda: {s: StrategyStats() for s in STRATEGIES})
    reference: StrategyStats = field(default_factory=StrategyStats)
    reference_calls: list[ReferenceCall] = field(default_factory=list)
    calls: int = 0
    runs: int = 0
    notes: Counter[str] = field(default_factory=Counter)


def replay_trajectory(traj: Trajectory, engine: Engine, totals: ReplayTotals,
                      strategies: Sequence[str] = STRATEGIES, use_memory: bool = True) -> None:
    call_at = {c.position: c for c in traj.calls}
    engine.meter.reset()
    lanes = {s: Lane(s) for s in strategies}
    ref = Lane("reference")
    facts = FactTracker()
    turn = 0
    with tempfile.TemporaryDirectory(prefix="ctxbench-") as tmpdir:
        tmp = Path(tmpdir)
        from ctxagent.context.spill import SpillStore

        spill = SpillStore(tmp / "spill")
        store, recall = (None, None)
        if "ctxagent" in lanes and use_memory:
            store, recall = _memory_for(tmp, traj.run_id)
            if store is None:
                totals.notes["memory layer missing: ctxagent built without recall"] += 1
        step = 0
        for pos, sev in enumerate(traj.events):
            call = call_at.get(pos)
            if call is not None:
                step += 1
                _measure_call(traj, sev, call, step, turn, lanes, ref, facts, engine, totals, store, recall)
            if sev.kind == "user":
                turn += 1
            _append(sev, lanes, ref, spill, engine, totals)
            facts.add(sev.kind, sev.data)
        if store is not None and hasattr(store, "close"):
            store.close()
    totals.runs += 1


def _append(sev: SourceEvent, lanes: dict[str, Lane], ref: Lane, spill: Any, engine: Engine,
            totals: ReplayTotals) -> None:
    if sev.kind == "source_compaction":
        firsts = [e.id for e in ref.events if e.kind in ("user", "assistant", "tool_result")]
        if firsts:
            ref.append("compaction", {"first_id": firsts[0], "last_id": ref.events[-1].id,
                                      "summary": sev.data.get("summary", ""), "method": "model"})
            totals.reference.compactions += 1
        return
    ref.append(sev.kind, sev.data)
    for lane in lanes.values():
        data = sev.data
        if lane.name == "ctxagent" and sev.kind == "tool_result":
            shown, meta = spill.maybe_spill(str(data.get("content", "")), engine.counter, SPILL_TOKENS)
            if meta is not None:
                data = {**data, "content": shown, "spill": meta}
                totals.strategies["ctxagent"].spills += 1
        lane.append(sev.kind, data)


def _measure_call(traj: Trajectory, sev: SourceEvent, call: Any, step: int, turn: int, lanes: dict[str, Lane],
                  ref: Lane, facts: FactTracker, engine: Engine, totals: ReplayTotals, store: Any, recall: Any) -> None:
    totals.calls += 1
    call_facts = facts.facts(sev.data.get("tool_calls") or []) if sev.kind == "assistant" else []
    after = any(e.kind == "compaction" for e in ref.events)  # the original run compacted before this call
    boundary = traj.first_compaction_position
    early = [f for f in call_facts if after and boundary is not None
             and (facts.last_reference(f) or 0) <= boundary] if call_facts else []
    meter = engine.meter
    for name, lane in lanes.items():
        stats = totals.strategies[name]
        warm = None
        if name == "ctxagent" and store is not None:
            new = lane.events[lane.ingested:]
            if new:
                store.ingest(new, traj.run_id)
                lane.ingested = len(lane.events)
            warm = recall
        t0 = time.perf_counter()
        try:
            result = engine.run(lane.events, traj.system, name, engine.window, step, max(turn, 1), warm)
        except ContextOverflowError:
            stats.overflows += 1
            stats.build_ms.append((time.perf_counter() - t0) * 1000)
            _count_facts(stats, call_facts, None, after, early)
            lane.prev_chunks = None
            continue
        stats.build_ms.append((time.perf_counter() - t0) * 1000)
        _record(stats, lane, result.request, meter, engine.window, call_facts, after, early)
        pruned_ids = getattr(result, "pruned_ids", None)
        if pruned_ids is not None:
            fresh = set(pruned_ids) - lane.pruned
            lane.pruned |= fresh
            stats.prunes += len(fresh)  # each tool result counted once, the first time it is pruned
        else:
            stats.prunes += int(getattr(result.report, "pruned", 0) or 0)
        for planned in getattr(result, "compactions", None) or []:
            stats.compactions += 1
            lane.append("compaction", planned.data.to_data())
    # the reference: the original run's own view, measured locally, never trimmed
    result = engine.run(ref.events, traj.system, "full", REFERENCE_WINDOW, step, max(turn, 1), None)
    chunks = meter.chunks(result.request)
    local = sum(n for _, n in chunks)
    rstats = totals.reference
    r = prefix_reuse(ref.prev_chunks, chunks)
    if r is not None:
        rstats.reuse.append(r)
    ref.prev_chunks = chunks
    _count_facts(rstats, call_facts, result.request, after, early)
    totals.reference_calls.append(ReferenceCall(call.reported, local, not after))


def _count_facts(stats: StrategyStats, call_facts: list[str], request: Request | None, after: bool,
                 early: list[str]) -> None:
    if not call_facts:
        return
    text = context_text(request) if request is not None else ""
    kept = retained(call_facts, text)
    stats.facts += len(call_facts)
    stats.retained += kept
    if after:
        stats.facts_after += len(call_facts)
        stats.retained_after += kept
        stats.facts_early += len(early)
        stats.retained_early += retained(early, text)


def _record(stats: StrategyStats, lane: Lane, request: Request, meter: RequestMeter, window: int,
            call_facts: list[str], after: bool, early: list[str]) -> None:
    chunks = meter.chunks(request)
    tokens = sum(n for _, n in chunks)
    stats.tokens.append(tokens)
    if tokens > window:
        stats.overflows += 1
    r = prefix_reuse(lane.prev_chunks, chunks)
    if r is not None:
        stats.reuse.append(r)
    lane.prev_chunks = chunks
    _count_facts(stats, call_facts, request, after, early)


# -- the whole source ----------------------------------------------------------------------------
def finish_reference(totals: ReplayTotals, window: int) -> Fit | None:
    """Fit reported = a + b·local over calls before the first compaction; fill the reference's tokens."""
    pre = [c for c in totals.reference_calls if c.before_compaction and c.reported]
    fit = fit_affine([c.local for c in pre], [float(c.reported or 0) for c in pre])
    rstats = totals.reference
    rstats.tokens = []
    rstats.overflows = 0
    for c in totals.reference_calls:
        tokens = fit.to_local(c.reported) if (fit is not None and c.reported) else c.local
        rstats.tokens.append(tokens)
        if tokens > window:
            rstats.overflows += 1
    return fit


def replay_source(trajectories: Sequence[Trajectory], window: int, strategies: Sequence[str] = STRATEGIES,
                  progress: Any = None, engine: Engine | None = None, use_memory: bool = True) -> dict[str, Any]:
    """Replay every trajectory and return the issue's JSON shape."""
    engine = engine or Engine.load(window)
    engine.window = window
    totals = ReplayTotals(strategies={s: StrategyStats() for s in strategies})
    skipped: Counter[str] = Counter()
    for traj in trajectories:
        replay_trajectory(traj, engine, totals, strategies, use_memory)
        skipped.update(traj.skipped)
        if progress is not None:
            progress.advance(note=traj.run_id[-40:])
    fit = finish_reference(totals, window)
    out_strats = {name: totals.strategies[name].to_dict() for name in strategies}
    out_strats["reference"] = totals.reference.to_dict()
    source = trajectories[0].source if trajectories else None
    result: dict[str, Any] = {
        "source": source,
        "window": window,
        "runs": totals.runs,
        "calls": totals.calls,
        "fit": fit.to_dict() if fit is not None else None,
        "strategies": out_strats,
        "skipped": dict(sorted(skipped.items())),
    }
    after_calls = sum(1 for c in totals.reference_calls if not c.before_compaction)
    if after_calls:
        # beside the shape: retention at the calls after the original run's own compaction,
        # where the real summary is all the reference kept of the early turns
        every = {**totals.strategies, "reference": totals.reference}
        result["after_source_compaction"] = {
            "calls": after_calls,
            "facts": totals.reference.facts_after,
            "retention": {name: (round(st.retained_after / st.facts_after, 4) if st.facts_after else None)
                          for name, st in every.items()},
            # facts whose last mention is at or before the compaction: only the summary could carry them
            "early_facts": totals.reference.facts_early,
            "early_retention": {name: (round(st.retained_early / st.facts_early, 4) if st.facts_early else None)
                                for name, st in every.items()},
        }
    if totals.notes:
        result["notes"] = dict(totals.notes)
    return result
