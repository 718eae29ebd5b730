"""Replay real trajectories through the context builder, per strategy, at every original model call.

Each strategy keeps its own copy of the session log (a list of `Event`), fed the source's events in
order. Before each event that was a model call in the original run, every strategy builds the
request it would have sent, and we measure it (metrics.py, presence.py, cache_cost.py):

- `full` and `window`: the builder's baselines on the raw events;
- `ctxagent`: tool results pass through the spill store before entering its log (as in the agent
  loop), the memory store ingests its events and recalls into the warm block, the builder gets the
  calibration ratio the product's Calibrator would have at that call, and a compaction the builder
  returns is appended as a `compaction` event so later calls see it;
- `last2+names`, `anthropic-clear`, `anthropic-compact`, `openai-compact`: emulations.py;
- `reference`: the original run as it happened — the raw events, plus the source's own compaction
  (Claude Code) as a compaction event whose summary is the real one. Its tokens are the prompt tokens
  the provider reported, its cost the cache reads and writes it reported.

Whole requests: every strategy's request carries the same stable prefix — the source's system prompt
and, where the transcript lacks them, an estimate of its system prompt and tool schemas (`Prefix`):
the intercept of the fit `reported = a + b · local` over the reference's calls before its first
compaction, a/b local tokens, stands in as filler text. Token counts are provider tokens: the local
count × the ratio the product's Calibrator would have at that call (fed every earlier call's
reference count and reported usage, one calibrator per source), or the reported usage (reference).
A request overflows when that calibrated size exceeds W.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxagent.agent.bench.cache_cost import DEFAULT_RULES, RULES, CacheRules, CacheSim
from ctxagent.agent.bench.emulations import ServerParams
from ctxagent.agent.bench.metrics import FactTracker
from ctxagent.agent.bench.presence import PresenceIndex
from ctxagent.agent.bench.readers import SourceEvent, Trajectory
from ctxagent.agent.bench.replay_measure import measure_call
from ctxagent.agent.bench.replay_setup import (
    MODELS,
    RAW,
    SPILL_TOKENS,
    STRATEGIES,
    CallContext,
    Engine,
    Lane,
    ReplayTotals,
    Setup,
    append_source_compaction,
    make_prefix,
    new_build_cache,
    source_fit,
)
from ctxagent.agent.bench.replay_stats import StrategyStats
from ctxagent.agent.bench.requirements import LineTracker
from ctxagent.context.ledger import result_facts


def _memory_for(tmp: Path, session: str) -> tuple[Any, Any]:
    """A fresh memory store and its recall hook, or (None, None) if the memory layer is missing."""
    try:
        from ctxagent.context.memory import MemoryStore
        from ctxagent.context.memory.recall import MemoryRecall
    except ImportError:
        return None, None
    store = MemoryStore.open(tmp / "memory.db")
    return store, MemoryRecall(store, session)



def replay_trajectory(traj: Trajectory, totals: ReplayTotals, setup: Setup) -> None:
    call_at = {c.position: c for c in traj.calls}
    # an event's time: that of the first call whose prompt holds it (the sources record call times only)
    times = [0.0] * len(traj.events)
    upcoming = 0.0
    for pos in range(len(traj.events) - 1, -1, -1):
        times[pos] = upcoming
        if pos in call_at:
            upcoming = call_at[pos].time or 0.0
    setup.engine.meter.reset()
    # the logs: one raw copy for every strategy that reads it as it is, and one per strategy that writes to it
    logs = {s: _lane(s, setup.rules) for s in ("raw", "ctxagent", "anthropic-compact", "openai-compact")
            if s in setup.strategies or (s == "raw" and any(x in RAW for x in setup.strategies))}
    meters = {s: _lane(s, setup.rules) for s in setup.strategies if s in RAW}  # their measuring state
    ref = _lane("reference", setup.rules)
    facts = FactTracker()
    tracker = LineTracker()
    presence = PresenceIndex()
    turn = step = 0
    with tempfile.TemporaryDirectory(prefix="ctxbench-") as tmpdir:
        tmp = Path(tmpdir)
        from ctxagent.context.spill import SpillStore

        spill = SpillStore(tmp / "spill")
        store, recall = (None, None)
        if "ctxagent" in logs and setup.use_memory:
            store, recall = _memory_for(tmp, traj.run_id)
            if store is None:
                totals.notes["memory layer missing: ctxagent built without recall"] += 1
        for pos, sev in enumerate(traj.events):
            call = call_at.get(pos)
            if call is not None:
                step += 1
                call_facts, after, early = _facts_at(sev, facts, ref, traj)
                ctx = CallContext(call_facts, after, early, facts.names(), tracker, presence,
                                  float(setup.calibrator.ratio), call.time, setup.prefix.system(traj.system),
                                  setup.ref_prefix.system(traj.system), step,
                                  max(turn, 1))
                measure_call(traj, call, ctx, logs, meters, ref, totals, setup, store, recall)
            if sev.kind == "user":
                turn += 1
            _append(sev, logs, ref, spill, setup.engine, totals, times[pos])
            facts.add(sev.kind, sev.data)
            tracker.add(sev.kind, sev.data, pos)
        if store is not None and hasattr(store, "close"):
            store.close()
    totals.runs += 1



def _lane(name: str, rules: CacheRules) -> Lane:
    return Lane(name, cache=new_build_cache(), sim=CacheSim(rules), sim_last=CacheSim(rules))



def _facts_at(sev: SourceEvent, facts: FactTracker, ref: Lane, traj: Trajectory) -> tuple[list[str], bool, list[str]]:
    call_facts = facts.facts(sev.data.get("tool_calls") or []) if sev.kind == "assistant" else []
    after = any(e.kind == "compaction" for e in ref.events)
    boundary = traj.first_compaction_position
    early = [f for f in call_facts if after and boundary is not None
             and (facts.last_reference(f) or 0) <= boundary] if call_facts else []
    return call_facts, after, early



def _append(sev: SourceEvent, logs: dict[str, Lane], ref: Lane, spill: Any, engine: Engine,
            totals: ReplayTotals, ts: float) -> None:
    if sev.kind == "source_compaction":
        if append_source_compaction(ref, sev):
            totals.reference.compactions += 1
        return
    ref.append(sev.kind, sev.data)
    for lane in logs.values():
        data = sev.data
        if lane.name == "ctxagent" and sev.kind == "tool_result":
            # as the product's loop does: facts from the whole output first, then the spill
            call = next((c for e in reversed(lane.events) if e.kind == "assistant" for c in e.assistant.tool_calls
                         if c.id == data.get("call_id")), None)
            facts = result_facts(call.name, call.arguments, str(data.get("content", ""))) if call is not None else {}
            if facts:
                data = {**data, "meta": {**(data.get("meta") or {}), **facts}}
            shown, meta = spill.maybe_spill(str(data.get("content", "")), engine.counter, SPILL_TOKENS)
            if meta is not None:
                data = {**data, "content": shown, "spill": meta}
                totals.strategies["ctxagent"].spills += 1
        lane.append(sev.kind, data, ts)



# -- the whole source ----------------------------------------------------------------------------
def replay_source(trajectories: Sequence[Trajectory], window: int, strategies: Sequence[str] = STRATEGIES,
                  progress: Any = None, engine: Engine | None = None, use_memory: bool = True,
                  rules: CacheRules | None = None, overhead: str = "auto",
                  server: ServerParams | None = None) -> dict[str, Any]:
    """Replay every trajectory and return the issue's JSON shape (plus the new measures)."""
    from ctxagent.context.calibrator import Calibrator

    engine = engine or Engine.load(window)
    engine.window = window
    source = trajectories[0].source if trajectories else None
    rules = rules or RULES[DEFAULT_RULES.get(source or "", "openai")]
    fit = source_fit(trajectories, engine)
    prefix = make_prefix(overhead, fit, engine.counter)
    ref_prefix = make_prefix("auto", fit, engine.counter) if overhead == "product" else prefix
    setup = Setup(engine, list(strategies), prefix, Calibrator(MODELS.get(source or "", "model")), rules,
                  server or ServerParams(), use_memory, ref_prefix)
    totals = ReplayTotals(strategies={s: StrategyStats() for s in strategies})
    skipped: Counter[str] = Counter()
    for traj in trajectories:
        replay_trajectory(traj, totals, setup)
        skipped.update(traj.skipped)
        if progress is not None:
            progress.advance(note=traj.run_id[-40:])
    out_strats = {name: totals.strategies[name].to_dict(rules) for name in strategies}
    out_strats["reference"] = totals.reference.to_dict(rules)
    result: dict[str, Any] = {
        "source": source,
        "window": window,
        "runs": totals.runs,
        "calls": totals.calls,
        "fit": fit.to_dict() if fit is not None else None,
        "prefix": prefix.to_dict(),
        "reference_prefix": ref_prefix.to_dict(),
        "calibration_ratio": round(float(setup.calibrator.ratio), 4),
        "cache_rules": {"name": rules.name, "read": rules.read, "write": rules.write, "min_tokens": rules.min_tokens,
                        "ttl_s": rules.ttl_s},
        "server_side": setup.server.describe(window),
        "strategies": out_strats,
        "skipped": dict(sorted(skipped.items())),
    }
    if totals.after_calls:
        every = {**totals.strategies, "reference": totals.reference}
        result["after_source_compaction"] = {
            "calls": totals.after_calls,
            "facts": totals.reference.facts_after,
            "retention": {n: (round(st.retained_after / st.facts_after, 4) if st.facts_after else None)
                          for n, st in every.items()},
            # facts whose last mention is at or before the compaction: only the summary could carry them
            "early_facts": totals.reference.facts_early,
            "early_retention": {n: (round(st.retained_early / st.facts_early, 4) if st.facts_early else None)
                                for n, st in every.items()},
            "requirement_retention": {n: _mean_or_none(st.requirements.after) for n, st in every.items()},
            "decision_retention": {n: _mean_or_none(st.decisions.after) for n, st in every.items()},
        }
    if totals.notes:
        result["notes"] = dict(totals.notes)
    return result


def _mean_or_none(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None

