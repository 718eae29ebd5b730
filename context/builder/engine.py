"""The ctxagent strategy: a pure function from the session log (and hooks) to a provider-neutral
request + report.

Called (through context/builder/dispatch.py) before every model call inside the tool loop. Layout, for
prompt-cache stability and for attention:
  1. system prompt (+ project instructions) and tool schemas — the stable prefix;
  2. history: compaction summaries in place of masked ranges, tool results as "tool" messages;
  3. the warm block (context/builder/warm.py: pinned constraints, open tasks, recalled memory) right
     before the newest user message, or after the trailing tool results.
When the draft does not fit, the relief tiers cut it, cheapest first (context/builder/relief.py).
Invariant: count_request(request) ≤ budget.limit, and the calibrated total fits as well. Same inputs →
identical request (inspect compares a sha256).
"""

from __future__ import annotations

from ctxagent.context.budget import Budget
from ctxagent.context.builder.cache import BuildCache, cache_for
from ctxagent.context.builder.inputs import CUT_STATES, BuildInputs, BuildResult, Draft, PlannedCompaction
from ctxagent.context.builder.measure import make_report
from ctxagent.context.builder.relief import relieve
from ctxagent.context.builder.render import warm_position
from ctxagent.context.builder.slice_relief import candidate_end, chunk_steps
from ctxagent.context.builder.slot_fold import fold_slots
from ctxagent.context.builder.task_state import task_state_for
from ctxagent.context.builder.warm import warm_text_for
from ctxagent.context.history import Summary
from ctxagent.context.request import Request


def build_ctxagent(inputs: BuildInputs) -> BuildResult:
    """One request by the ctxagent strategy: the view, the warm block, relief until it fits."""
    cache = cache_for(inputs.counter, inputs.cache)
    limit = inputs.budget.effective_limit(inputs.calibration_ratio)
    events = list(inputs.events)
    notes: list[str] = []
    log = cache.log_state(events)
    task = task_state_for(inputs, log.items, log.ledger, limit, log.summaries)  # what compactions mask (task_state.py)
    warm, note = warm_text_for(inputs, log.live, log.ledger, log.items, log.cue, task, log.summaries)
    if note:
        notes.append(note)
    # messages that met a cold prompt cache (past the provider's TTL, or another model): relief is free there
    cold = log.cold.with_build(inputs.model, inputs.cache_rules.ttl_s)
    draft, records, warm = relieve(inputs, events, limit, warm, notes, cache, cold)
    # the view's summaries: the log's, unless the build planned compactions (then the draft's view has more)
    shown = None if records else log.summaries
    return _finish(inputs, draft, warm, records, notes, cache, shown)


def previous_cut_end(draft: Draft, budget: Budget, stable: int, steps: tuple[int, ...] | None = None) -> int:
    """Where the cut part of the history ended at the previous cut (a slot index, 0 < it < `stable`; else 0).

    In a long turn the slice is relieved a chunk of steps at a time (slice_relief.candidate_end): each
    cut clears the traffic that aged past the protected steps since the last one, oldest first, so the
    cut part's end jumps by a chunk — more blocks than a cache breakpoint looks back (20). What was cut
    before the previous chunk boundary is what the previous cut left, and it has not changed since (the
    cut set only grows, oldest first): the provider marks its end too, so the request after a cut finds
    the entry the requests before it wrote there. A function of the draft alone, as the request is."""
    protect_steps = budget.protect_steps
    if protect_steps <= 0 or stable <= 0:
        return 0
    slots = draft.slots
    if steps is None:  # the assistant slots' indices (the slots' fold keeps them)
        steps = tuple(i for i, s in enumerate(slots) if s.msg.role == "assistant")
    chunk = chunk_steps(protect_steps, budget.step_chunk)
    if len(steps) <= chunk:
        return 0
    # the candidates' end as it was one chunk of steps ago: the previous cut's end, in steady state
    before = candidate_end(draft, protect_steps, budget.step_chunk, steps[len(steps) - chunk], steps)
    # the last cleared slot before it, else the last pruned one: walked back from `before`, where the
    # cleared part ends in steady state (this runs at every build)
    end = pruned = 0
    for i in range(min(before, len(slots)) - 1, -1, -1):
        state = slots[i].state
        if state == "cleared":
            end = i + 1
            break
        if not pruned and state in CUT_STATES:
            pruned = i + 1
    end = end or pruned
    return end if 0 < end < stable else 0


def _finish(inputs: BuildInputs, draft: Draft, warm: str, records: list[PlannedCompaction], notes: list[str],
            cache: BuildCache, shown: tuple[Summary, ...] | None = None) -> BuildResult:
    compaction = records[0].data if records else None
    for extra in records[1:]:
        notes.append(f"also compacted the current turn's older steps: events {extra.data.first_id}–{extra.data.last_id}")
    # the cleared set only grows, oldest first (slice_relief.py): up to its newest member the history
    # stays as it is until the next cut, which starts after it. Previews (low-value results, the
    # fit-the-limit tiers) may still be cleared later, so they mark the end only while nothing is cleared
    fold = fold_slots(draft.slots, cache)  # one pass over the new slots only (slot_fold.py)
    messages, stable = list(fold.messages), fold.stable
    anchor = previous_cut_end(draft, inputs.budget, stable, fold.steps)
    if draft.warm_msg is not None:
        at = warm_position(messages)
        messages.insert(at, draft.warm_msg)
        stable += at < stable
        anchor += 0 < anchor and at < anchor
    request = Request(system=inputs.system, messages=messages, tools=list(inputs.tools),
                      max_tokens=draft.reply_tokens or inputs.budget.max_output,
                      stable_messages=stable, anchor_messages=anchor)
    report = make_report(inputs, draft, request, compaction, notes, cache=cache, fold=fold)
    if shown is None:
        shown = tuple(it for it in draft.items if isinstance(it, Summary))
    masked = [[it.first_id, it.last_id] for it in shown]
    return BuildResult(
        request=request,
        report=report,
        warm_text=warm,
        compactions=list(records),
        pruned_ids=list(fold.cut_ids),
        spilled_ids=list(fold.spilled_ids),
        masked=masked,
    )
