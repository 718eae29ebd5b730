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
from ctxagent.context.builder.inputs import (
    CUT_STATES,
    BuildInputs,
    BuildResult,
    Draft,
    PlannedCompaction,
    Slot,
)
from ctxagent.context.builder.measure import make_report
from ctxagent.context.builder.relief import relieve
from ctxagent.context.builder.render import warm_position
from ctxagent.context.builder.slice_relief import candidate_end, chunk_steps
from ctxagent.context.builder.task_state import task_state_for
from ctxagent.context.builder.warm import warm_text_for
from ctxagent.context.history import Summary
from ctxagent.context.request import Message, Request


def build_ctxagent(inputs: BuildInputs) -> BuildResult:
    """One request by the ctxagent strategy: the view, the warm block, relief until it fits."""
    cache = cache_for(inputs.counter, inputs.cache)
    limit = inputs.budget.effective_limit(inputs.calibration_ratio)
    events = list(inputs.events)
    notes: list[str] = []
    log = cache.log_state(events)
    task = task_state_for(inputs, log.items, log.ledger, limit)  # the task state compactions mask (task_state.py)
    warm, note = warm_text_for(inputs, log.live, log.ledger, log.items, log.cue, task)
    if note:
        notes.append(note)
    # messages that met a cold prompt cache (past the provider's TTL, or another model): relief is free there
    cold = log.cold.with_build(inputs.model, inputs.cache_rules.ttl_s)
    draft, records, warm = relieve(inputs, events, limit, warm, notes, cache, cold)
    return _finish(inputs, draft, warm, records, notes, cache)


def _walk(slots: list[Slot]) -> tuple[list[Message], int, list[int], list[int]]:
    """One pass over the slots (this runs every build over every visible message): the messages; the
    index past the part of the history the next build shows unchanged, barring a compaction (the last
    cleared slot, else the last pruned one); the cut events' ids; the spilled events' ids."""
    messages: list[Message] = []
    cleared = pruned = 0
    cut_ids: list[int] = []
    spilled_ids: list[int] = []
    for i, s in enumerate(slots):
        msg = s.msg
        messages.append(msg)
        state = s.state
        if state in CUT_STATES:
            if state == "cleared":
                cleared = i + 1
            else:
                pruned = i + 1
            if msg.event_id is not None:
                cut_ids.append(msg.event_id)
        if s.spill is not None and s.event_id is not None:
            spilled_ids.append(s.event_id)
    return messages, cleared or pruned, cut_ids, spilled_ids


def previous_cut_end(draft: Draft, budget: Budget, stable: int) -> int:
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
    steps = [i for i, s in enumerate(slots) if s.msg.role == "assistant"]
    chunk = chunk_steps(protect_steps, budget.step_chunk)
    if len(steps) <= chunk:
        return 0
    # the candidates' end as it was one chunk of steps ago: the previous cut's end, in steady state
    before = candidate_end(draft, protect_steps, budget.step_chunk, steps[len(steps) - chunk], steps)
    cleared = pruned = 0
    for i in range(min(before, len(slots))):
        state = slots[i].state
        if state == "cleared":
            cleared = i + 1
        elif state in CUT_STATES:
            pruned = i + 1
    end = cleared or pruned
    return end if 0 < end < stable else 0


def _finish(inputs: BuildInputs, draft: Draft, warm: str, records: list[PlannedCompaction], notes: list[str],
            cache: BuildCache) -> BuildResult:
    compaction = records[0].data if records else None
    for extra in records[1:]:
        notes.append(f"also compacted the current turn's older steps: events {extra.data.first_id}–{extra.data.last_id}")
    # the cleared set only grows, oldest first (slice_relief.py): up to its newest member the history
    # stays as it is until the next cut, which starts after it. Previews (low-value results, the
    # fit-the-limit tiers) may still be cleared later, so they mark the end only while nothing is cleared
    messages, stable, cut_ids, spilled_ids = _walk(draft.slots)
    anchor = previous_cut_end(draft, inputs.budget, stable)
    if draft.warm_msg is not None:
        at = warm_position(messages)
        messages.insert(at, draft.warm_msg)
        stable += at < stable
        anchor += 0 < anchor and at < anchor
    request = Request(system=inputs.system, messages=messages, tools=list(inputs.tools),
                      max_tokens=draft.reply_tokens or inputs.budget.max_output,
                      stable_messages=stable, anchor_messages=anchor)
    report = make_report(inputs, draft, request, compaction, notes, cache=cache)
    masked = [[it.first_id, it.last_id] for it in draft.items if isinstance(it, Summary)]
    return BuildResult(
        request=request,
        report=report,
        warm_text=warm,
        compactions=list(records),
        pruned_ids=cut_ids,
        spilled_ids=spilled_ids,
        masked=masked,
    )
