"""Replay real trajectories through the context builder, per strategy, at every original model call.

Each strategy keeps its own copy of the session log (a list of `Event`), fed the source's events in
order. Before each event that was a model call in the original run, every strategy builds the
request it would have sent, and we measure it (used_later.py, metrics.py, presence.py, cache_cost.py):

- `full` and `window`: the builder's baselines on the raw events;
- `ctxagent`: tool results pass through the spill store before entering its log (as in the agent
  loop), the memory store ingests its events and recalls into the warm block, the builder gets the
  calibration ratio the product's Calibrator would have at that call and the call's model, a
  compaction the builder returns is appended (and billed as the summary model's call) so later calls
  see it, and each step's `context_report` records the model, as the agent logs it;
- `grep`, `last2+names`, `anthropic-clear`, `anthropic-compact`, `openai-compact`: emulations.py;
- `reference`: the original run as it happened — the raw events, plus the source's own compaction
  (Claude Code) as a compaction event whose summary is the real one. Its tokens are the prompt tokens
  the provider reported; its cost is simulated by the same cache model as the strategies', with its
  real bill beside it.

Whole requests: every strategy's request carries the same stable prefix — the source's system prompt
and, where the transcript lacks them, an estimate of its system prompt and tool schemas (`Prefix`):
the intercept of the fit `reported = a + b · local` over the reference's calls before its first
compaction, a/b local tokens, stands in as filler text. Token counts are provider tokens: the local
count × the ratio the product's Calibrator would have at that call (fed every earlier call's
reference count and reported usage, one calibrator per model), or the reported usage (reference).
A request overflows when that calibrated size exceeds W.

The work is split in two passes so that runs can be replayed apart (replay_run.py runs them in
processes): the *fit pass* counts the reference's requests of every run (the fit, the prefix and the
calibrator's ratio at every call come from it, in run order), then each run is replayed on its own
with its list of ratios, and the per-run totals are added up in run order.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxagent.context.events import ToolResultData
from ctxagent.context.ledger import result_facts
from ctxagent.tui.lab.bench.cache_cost import CacheRules, CacheSim, transcript_ttl
from ctxagent.tui.lab.bench.emulations import GrepTracker
from ctxagent.tui.lab.bench.metrics import FactTracker
from ctxagent.tui.lab.bench.presence import PresenceIndex
from ctxagent.tui.lab.bench.prices import Pricing
from ctxagent.tui.lab.bench.readers import SourceEvent, Trajectory
from ctxagent.tui.lab.bench.replay_measure import CallContext, measure_call, reference_compaction
from ctxagent.tui.lab.bench.replay_setup import (
    GREP,
    MODELS,
    RAW,
    SPILL_TOKENS,
    STRATEGIES,
    Engine,
    Lane,
    Prefix,
    ReplayTotals,
    Setup,
    append_source_compaction,
    call_model,
    new_build_cache,
    request_local,
    source_payload,
)
from ctxagent.tui.lab.bench.replay_stats import StrategyStats
from ctxagent.tui.lab.bench.requirements import LineTracker
from ctxagent.tui.lab.bench.used_later import (
    HistoryIndex,
    MessageFacts,
    history_text,
    output_texts,
    used_strings,
)

__all__ = ["STRATEGIES", "Engine", "replay_trajectory", "trajectory_rules"]


def _memory_for(tmp: Path, session: str, setup: Setup) -> tuple[Any, Any]:
    """A fresh memory store and its recall hook, or (None, None) if the memory layer is missing."""
    try:
        from ctxagent.context.memory import MemoryStore
        from ctxagent.context.memory.recall import MemoryRecall
    except ImportError:
        return None, None
    store = setup.memory_store(tmp / "memory.db") if setup.memory_store is not None else MemoryStore.open(tmp / "memory.db")
    return store, MemoryRecall(store, session)


def trajectory_rules(traj: Trajectory, rules: CacheRules) -> CacheRules:
    """The cache rules of one run: the 1-hour TTL (and its write price) when its transcript wrote with it."""
    return rules.with_ttl(transcript_ttl([(c.cache_write, c.cache_write_1h) for c in traj.calls]))


def replay_trajectory(traj: Trajectory, setup: Setup, ratios: Sequence[float],
                      ref_locals: Sequence[float] | None = None, on_call: Any = None) -> ReplayTotals:
    """One run replayed on its own: `ratios` is the calibrator's ratio at each of its calls (calibrated_ratios),
    `ref_locals` the fit pass's count of each reference request (a cross-check); `on_call()` after each call."""
    totals = ReplayTotals(strategies={s: StrategyStats() for s in setup.strategies})
    rules = trajectory_rules(traj, setup.rules)
    if rules is not setup.rules:
        totals.ttl_1h_runs += 1
    call_at = {c.position: (k, c) for k, c in enumerate(traj.calls)}
    # an event's time: that of the first call whose prompt holds it (the sources record call times only)
    times = [0.0] * len(traj.events)
    upcoming = 0.0
    for pos in range(len(traj.events) - 1, -1, -1):
        times[pos] = upcoming
        if pos in call_at:
            upcoming = call_at[pos][1].time or 0.0
    setup.engine.meter.reset()
    # the logs: one raw copy for every strategy that reads it as it is, and one per strategy that writes to it
    logs = {s: _lane(s, rules) for s in ("raw", "ctxagent", "anthropic-compact", "openai-compact")
            if s in setup.strategies or (s == "raw" and any(x in RAW for x in setup.strategies))}
    if "ctxagent" in logs:
        logs["ctxagent"].source_ids = {}
    meters = {s: _lane(s, rules) for s in setup.strategies if s in RAW}  # their measuring state
    ref = _lane("reference", rules)
    facts, tracker, presence = FactTracker(), LineTracker(), PresenceIndex()
    history, message_facts = HistoryIndex(), MessageFacts()
    grep = GrepTracker() if GREP in setup.strategies else None
    ref_system = setup.ref_prefix.system(traj.system)
    turn = step = 0
    with tempfile.TemporaryDirectory(prefix="ctxbench-") as tmpdir:
        tmp = Path(tmpdir)
        from ctxagent.context.spill import SpillStore

        spill = SpillStore(tmp / "spill")
        store, recall = (None, None)
        if "ctxagent" in logs and setup.use_memory:
            store, recall = _memory_for(tmp, traj.run_id, setup)
            if store is None:
                totals.notes["memory layer missing: ctxagent built without recall"] += 1
        for pos, sev in enumerate(traj.events):
            hit = call_at.get(pos)
            if hit is not None:
                k, call = hit
                step += 1
                call_facts, after, early = _facts_at(sev, facts, ref, traj)
                model = call_model(call, traj.source)
                used = [(kind, s) for kind, s in used_strings(output_texts(sev.data)) if history.seen(kind, s)]
                ctx = CallContext(call, call_facts, after, early, facts.names(), tracker, presence, used, history,
                                  message_facts, list(grep.lines) if grep is not None else [], float(ratios[k]),
                                  call.time, model, setup.pricing.input_weight(model), rules,
                                  setup.prefix.system(traj.system), ref_system, step, max(turn, 1),
                                  (request_local(ref_locals[k], ref_system, setup.ref_prefix.tools, setup.engine)
                                   if ref_locals is not None else None))
                measure_call(traj, call, ctx, logs, meters, ref, totals, setup, store, recall)
                if on_call is not None:
                    on_call()
            if sev.kind == "user":
                turn += 1
            _append(pos, sev, logs, ref, spill, setup, totals, times[pos])
            facts.add(sev.kind, sev.data)
            tracker.add(sev.kind, sev.data, pos)
            if grep is not None:
                grep.add(sev.kind, sev.data)
            if sev.kind in ("user", "assistant", "tool_result"):
                history.add(pos, history_text(sev.kind, sev.data))
        if store is not None and hasattr(store, "close"):
            store.close()
    totals.runs = 1
    return totals


def _lane(name: str, rules: CacheRules) -> Lane:
    return Lane(name, cache=new_build_cache(), sim=CacheSim(rules), sim_last=CacheSim(rules))


def _facts_at(sev: SourceEvent, facts: FactTracker, ref: Lane, traj: Trajectory) -> tuple[list[str], bool, list[str]]:
    call_facts = facts.facts(sev.data.get("tool_calls") or []) if sev.kind == "assistant" else []
    after = any(e.kind == "compaction" for e in ref.events)
    boundary = traj.first_compaction_position
    early = [f for f in call_facts if after and boundary is not None
             and (facts.last_reference(f) or 0) <= boundary] if call_facts else []
    return call_facts, after, early


def _append(pos: int, sev: SourceEvent, logs: dict[str, Lane], ref: Lane, spill: Any, setup: Setup,
            totals: ReplayTotals, ts: float) -> None:
    if sev.kind == "source_compaction":
        reference_compaction(ref, str(sev.data.get("summary", "")), sev.data.get("usage"), setup, totals)
        if append_source_compaction(ref, sev):
            totals.reference.compactions += 1
        return
    payload = source_payload(sev)
    ref.append(payload)
    for lane in logs.values():
        shown = payload
        if lane.name == "ctxagent" and isinstance(payload, ToolResultData):
            shown = _as_the_loop_logs(payload, lane, spill, setup, totals)
        ev = lane.append(shown, ts)
        if lane.source_ids is not None:
            lane.source_ids[pos] = ev.id
            if isinstance(shown, ToolResultData) and shown.spill_ref is not None:
                lane.spills[ev.id] = shown.spill_ref.handle


def _as_the_loop_logs(result: ToolResultData, lane: Lane, spill: Any, setup: Setup, totals: ReplayTotals) -> ToolResultData:
    """A tool result as the product's loop logs it: facts from the whole output first, then the spill."""
    call = next((c for e in reversed(lane.events) if e.kind == "assistant" for c in e.assistant.tool_calls
                 if c.id == result.call_id), None)
    update: dict[str, Any] = {}
    found = result_facts(call.name, call.arguments, result.content) if call is not None else {}
    if found:
        update["meta"] = {**result.meta.to_data(), **found}
    shown, meta = spill.maybe_spill(result.content, setup.engine.counter, SPILL_TOKENS)
    if meta is not None:
        update["content"] = shown
        update["spill"] = meta
        totals.strategies["ctxagent"].spills += 1
    return ToolResultData(**{**result.to_data(), **update}) if update else result


def result_of(plan: Any, setup: Setup, totals: ReplayTotals, fit: Any, prefix: Prefix, ref_prefix: Prefix,
              final_ratios: dict[str, float], skipped: dict[str, int],
              hidden: dict[str, float] | None = None) -> dict[str, Any]:
    """The JSON shape of a whole source's replay; `hidden`: per run with some, the local tokens its requests
    carried after its own compaction beyond its transcript (replay_setup.hidden_after_compaction)."""
    rules = setup.rules
    out_strats = {name: totals.strategies[name].to_dict() for name in setup.strategies}
    out_strats["reference"] = totals.reference.to_dict()
    main = MODELS.get(plan.source, "model")
    result: dict[str, Any] = {
        "source": plan.source,
        "window": plan.window,
        "runs": totals.runs,
        "calls": totals.calls,
        "fit": fit.to_dict() if fit is not None else None,
        "prefix": prefix.to_dict(),
        "reference_prefix": ref_prefix.to_dict(),
        "calibration_ratio": final_ratios.get(main, next(iter(final_ratios.values()), 1.0)),
        "calibration_ratios": final_ratios,
        "hidden_after_compaction": dict(hidden or {}),
        "cache_rules": {"name": rules.name, "read": rules.read, "write": rules.write, "write_1h": rules.write_1h,
                        "min_tokens": rules.min_tokens, "ttl_s": rules.ttl_s, "runs_with_1h_ttl": totals.ttl_1h_runs},
        "pricing": setup.pricing.describe(sorted(totals.models)),
        "models": dict(sorted(totals.models.items())),
        "server_side": setup.server.describe(plan.window),
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
            "used_later": {n: st.used.to_dict()["after_source_compaction"]["pooled"] for n, st in every.items()},
            "used_later_mean_over_calls": {n: st.used.to_dict()["after_source_compaction"]["mean_over_calls"]
                                           for n, st in every.items()},
        }
    if totals.notes:
        result["notes"] = dict(totals.notes)
    return result


def _mean_or_none(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def default_pricing(source: str) -> Pricing:
    return Pricing(MODELS.get(source, "model"))
