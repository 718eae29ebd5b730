"""Pressure relief of the ctxagent strategy: the tiers that make a draft fit, cheapest first.

Slice enforcement first, whatever the total (context/builder/slice_relief.py): tool traffic (results, and
old calls' long arguments) beyond the tools slice is pruned in the view, oldest first, down to a lower
watermark (hysteresis, so the prefix stays stable for prompt caching between cuts). Then, re-measuring
after each cut and stopping as soon as the draft fits the limit:

  1. prune tool results older than the protected recent turns (view only);
  2. compact the oldest turns (a summary; the caller appends the returned compaction events, the
     originals stay in the log);
  3. prune recent tool results, except the newest step's;
  4. compact the current turn's older steps (its last KEEP_RECENT_STEPS stay verbatim);
  5. prune the newest step's results;
  6. the reply's reserve yields: the request asks for a shorter reply, down to Budget.reply_floor;
     when even that is not enough (a stable prefix that leaves little room), every tool result and
     every call's long arguments are cleared to one line, oldest first, until the draft fits it;
     then a summary larger than the cap the prefix now leaves is shown shortened to it, oldest first
     (view only: fewer, shorter bullets of its own sections; its range stays readable by read_event) —
     a summary written when the ratio or the prefix left more room is not a fixed cost; last, the
     working-memory block is re-made within what is left (its oldest items go first, and it says how
     many: search_memory and read_event find them);
  7. a clear ContextOverflowError: one message alone cannot fit.

A pruned result shows a preview (context/prune.py), a cleared one a one-line stub; both keep the
requirement lines the session ledger quoted from it. Every cut is memoized in the BuildCache under
what it is a function of, so the next build repeats it for free.
"""

from __future__ import annotations

import dataclasses
import functools

from ctxagent.context.builder.cache import BuildCache
from ctxagent.context.builder.inputs import CUT_STATES, BuildInputs, Draft, PlannedCompaction, Slot
from ctxagent.context.builder.render import SUMMARY_HEADER, assemble, with_content
from ctxagent.context.builder.slice_relief import enforce_tools_slice
from ctxagent.context.builder.slot_fold import fold_slots
from ctxagent.context.builder.task_state import EMPTY, task_state_for
from ctxagent.context.builder.warm import warm_text_for
from ctxagent.context.compact import compaction_record, shrink_summary, user_positions
from ctxagent.context.errors import ContextOverflowError
from ctxagent.context.events import CompactionData
from ctxagent.context.history import Event, Summary, ViewItem
from ctxagent.context.ledger import with_quotes
from ctxagent.context.prune import LOW_VALUE, cleared_arguments, cleared_text, pruned_text
from ctxagent.context.request import Message, ToolCall
from ctxagent.context.tokens import MESSAGE_OVERHEAD, TokenCounter, count_message

MAX_RELIEF_ROUNDS = 64  # a safety bound: each round compacts strictly more, so few are ever needed
KEEP_RECENT_STEPS = 2  # an in-turn compaction keeps the current turn's last steps verbatim
MODEL_SUMMARY_ESTIMATE = 800  # tokens a model summary is assumed to take when choosing a range
PRUNED_CHARS = 2000  # about what a pruned preview holds (the cache's size accounting)


def relieve(inputs: BuildInputs, events: list[Event], limit: int, warm: str, notes: list[str],
            cache: BuildCache, cold: frozenset[int]) -> tuple[Draft, list[PlannedCompaction], str]:
    """Apply the tiers until the draft fits; return it with the compaction records to append, in order.

    The pipeline is a function of the state (log + records so far), re-run from scratch after each
    compaction, so a later re-build from the log with the records appended reaches the same draft
    without compacting again (inspect's byte-identical replay depends on this).
    """
    counter = inputs.counter
    next_id = len(events)  # ids are positions in the log: the next appended event gets this one
    records: list[tuple[int, CompactionData, bool]] = []  # (planned event id, data, is an old-turns record)
    summary_cap = max(256, limit // 4)
    task = EMPTY
    warm_fixed = False  # the last tier re-made the working-memory block smaller: keep it
    for _ in range(MAX_RELIEF_ROUNDS):
        log = cache.log_state([*events, *(Event(eid, CompactionData.KIND, data.to_data())
                                          for eid, data, _ in records)])
        task = task_state_for(inputs, log.items, log.ledger, limit, log.summaries)
        if inputs.warm_override is None and records and not warm_fixed:
            # the ledger holds the summaries' open tasks; what the task state quotes is not repeated
            warm, _ = warm_text_for(inputs, log.live, log.ledger, log.items, log.cue, task, log.summaries)
        draft = assemble(list(log.items), inputs, warm, cache, log.ledger, task.sections)
        # a summary takes at most a quarter of the limit, and a third of the room the stable prefix leaves
        summary_cap = max(256, min(limit // 4, (limit - draft.fixed) // 3))
        enforce_tools_slice(draft, inputs.budget, lambda s: _pruned_memo(s, counter, cache),
                            lambda s: _cleared_memo(s, counter, cache), cold, cache.enforced, cache.stats,
                            fold_slots(draft.slots, cache))
        _prune(draft, "old", counter, cache, limit)
        if draft.total() <= limit:
            break
        if inputs.allow_compaction:
            end = _choose_compaction_end(draft, inputs, limit)
            record = compaction_record(draft.items[:end], inputs.summarize, inputs.focus, counter, summary_cap) if end is not None else None
            if record is not None:
                if record.note:
                    notes.append(record.note)
                if records and records[-1][2]:
                    # this range starts at the earlier record's first id and swallows it: replace it,
                    # keeping its event id, so the log only ever needs the final record
                    records[-1] = (records[-1][0], record, True)
                else:
                    records.append((next_id + len(records), record, True))
                continue
        _prune(draft, "recent", counter, cache, limit)
        if draft.total() <= limit:
            break
        if inputs.allow_compaction:
            chosen = _choose_in_turn_range(draft)
            record = compaction_record(chosen, inputs.summarize, inputs.focus, counter, summary_cap) if chosen else None
            if record is not None:
                if record.note:
                    notes.append(record.note)
                records.append((next_id + len(records), record, False))
                continue
        _prune(draft, "all", counter, cache, limit)
        yielded = inputs.budget.yielded_limit(inputs.calibration_ratio)
        _clear_all(draft, counter, cache, yielded)
        _shorten_summaries(draft, counter, cache, yielded, summary_cap, inputs.focus)
        if draft.total() > yielded and draft.warm_msg is not None and inputs.warm_override is None and not warm_fixed:
            # the working-memory block within what is left, then the round again with it: what a re-build
            # given this block as sent (inspect's, warm_override) runs, so it reaches the same request
            room = yielded - (draft.total() - draft.warm_tokens) - MESSAGE_OVERHEAD
            warm, _ = warm_text_for(inputs, log.live, log.ledger, log.items, log.cue, task, log.summaries,
                                    max_tokens=max(0, room))
            warm_fixed = True
            continue
        break
    if draft.total() > limit and draft.total() <= inputs.budget.yielded_limit(inputs.calibration_ratio):
        draft.reply_tokens = inputs.budget.reply_room(draft.total(), inputs.calibration_ratio)
        notes.append(f"nothing left to cut: the reply's reserve yields, this request asks for at most "
                     f"{draft.reply_tokens:,} tokens of reply (not {inputs.budget.max_output:,})")
    elif draft.total() > limit:
        raise ContextOverflowError(draft.overflow_message(inputs.budget, inputs.calibration_ratio))
    if task.note:
        notes.append(task.note)
    return draft, [PlannedCompaction(eid, data) for eid, data, _ in records], warm


def _pruned(slot: Slot, counter: TokenCounter) -> tuple[Message, int]:
    preview = pruned_text(slot.source, counter, slot.event_id, slot.spill)
    msg = with_content(slot.msg, with_quotes(preview, slot.quotes))
    return msg, count_message(msg, counter)


def _pruned_memo(slot: Slot, counter: TokenCounter, cache: BuildCache) -> tuple[Message, int]:
    # the preview is a function of the verbatim message (itself memoized per event), the logged text
    # and the spill handle: remember it under those
    return cache.memo(("pruned", slot.event_id, slot.msg.role), (slot.msg, slot.source, slot.spill, slot.quotes),
                      lambda: _pruned(slot, counter), kind="prunes", chars=PRUNED_CHARS)


def _cleared(slot: Slot, counter: TokenCounter) -> tuple[Message, int]:
    stub = cleared_text(slot.source, slot.msg.name, slot.event_id, slot.spill)
    msg = with_content(slot.msg, with_quotes(stub, slot.quotes))  # quoted requirements stay with the stub
    return msg, count_message(msg, counter)


def _cleared_memo(slot: Slot, counter: TokenCounter, cache: BuildCache) -> tuple[Message, int]:
    if not slot.is_tool_result:
        return cache.memo(("cleared_call", slot.event_id), slot.msg, lambda: _cleared_call(slot, counter),
                          kind="prunes", chars=PRUNED_CHARS)
    # the stub names the tool and keeps the message's call id and error flag: anchor on those too — one
    # cache serves several logs that agree on a prefix (the bench's strategies), so an event id alone does
    # not say which event it is (not on the whole message: it may show a preview or the verbatim text)
    anchor = (slot.msg.name, slot.msg.tool_call_id, slot.msg.is_error, slot.source, slot.spill, slot.quotes)
    return cache.memo(("cleared", slot.event_id, slot.msg.role), anchor,
                      lambda: _cleared(slot, counter), kind="prunes", chars=PRUNED_CHARS)


def _cleared_call(slot: Slot, counter: TokenCounter) -> tuple[Message, int]:
    calls = [ToolCall(c.id, c.name, cleared_arguments(c.arguments, slot.event_id)) for c in slot.msg.tool_calls]
    msg = dataclasses.replace(slot.msg, tool_calls=calls)
    return msg, count_message(msg, counter)


def _prune(draft: Draft, tier: str, counter: TokenCounter, cache: BuildCache, limit: int) -> None:
    if draft.total() <= limit:
        return
    for _, _, index in sorted(_tool_candidates(draft, tier=tier)):  # prune_order's order: lowest value, then oldest
        if draft.total() <= limit:
            return
        draft.cut(index, lambda s: _pruned_memo(s, counter, cache), "pruned")


def _clear_all(draft: Draft, counter: TokenCounter, cache: BuildCache, limit: int) -> None:
    """The deepest cut, oldest first, until the draft fits `limit`: tool results to their one-line stub
    (a read_event handle), calls' long arguments to their first characters."""
    for index, slot in enumerate(draft.slots):
        if draft.total() <= limit:
            return
        if slot.event_id is None or slot.state == "cleared":
            continue
        if slot.is_tool_result or slot.msg.tool_calls:
            draft.cut(index, lambda s: _cleared_memo(s, counter, cache), "cleared")


def _shorten_summaries(draft: Draft, counter: TokenCounter, cache: BuildCache, limit: int, cap: int,
                       focus: str | None) -> None:
    """Oldest first until the draft fits `limit`: a summary over `cap` tokens shown as its own sections cut
    down to the cap (compact.shrink_summary), under the same header, without what render quoted beside it."""
    for index, slot in enumerate(draft.slots):
        if draft.total() <= limit:
            return
        if slot.state != "summary" or slot.tokens <= cap or not 0 <= slot.item_index < len(draft.items):
            continue
        item = draft.items[slot.item_index]
        if not isinstance(item, Summary) or item.method == "server":  # a provider's block goes back verbatim
            continue
        draft.cut(index, functools.partial(_shortened_memo, item=item, counter=counter, cache=cache, cap=cap, focus=focus),
                  "shortened")


def _shortened_memo(slot: Slot, item: Summary, counter: TokenCounter, cache: BuildCache, cap: int,
                    focus: str | None) -> tuple[Message, int]:
    def compute() -> tuple[Message, int]:
        header = SUMMARY_HEADER.format(first=item.first_id, last=item.last_id)
        room = max(1, cap - counter.count(header) - MESSAGE_OVERHEAD - 1)  # the newline after the header
        msg = with_content(slot.msg, header + "\n" + shrink_summary([item], counter, room, focus))
        return msg, count_message(msg, counter)

    return cache.memo(("shortened", slot.event_id, cap), slot.msg, compute, kind="prunes", chars=PRUNED_CHARS)


def _tool_candidates(draft: Draft, *, tier: str) -> list[tuple[int, int, int]]:
    """(rank, event id, slot index) of the tool results a tier may prune — PruneCandidate.sort_key
    plus the index, as plain tuples: this runs every build over every visible result.

    tier "old": results before the protected recent turns; "recent": also protected ones except the
    newest step's (what the model is about to read); "all": everything left."""
    stop = draft.protect_from if tier == "old" else draft.last_step_start() if tier == "recent" else len(draft.slots)
    slots = draft.slots
    stale = draft.stale()  # answers a later step replaced go first (computed only under pressure, once per draft)
    return [(LOW_VALUE if s.event_id in stale else s.rank, s.event_id, i) for i, s in enumerate(slots[:stop])
            if s.is_tool_result and s.state not in CUT_STATES and s.event_id is not None]


def _choose_compaction_end(draft: Draft, inputs: BuildInputs, limit: int) -> int | None:
    """Index in draft.items where the compacted range ends (a user message that stays visible)."""
    users = user_positions(draft.items)
    if not users:
        return None
    newest = users[-1]
    protect = max(1, inputs.protect_turns)
    boundary = users[-protect] if len(users) >= protect else users[0]
    ends = [u for u in users if u >= boundary and u > 0]
    if not ends:
        return None
    total = draft.total()
    best: int | None = None
    for end in ends:
        covered = draft.tokens_before_item(end)
        chosen = draft.items[:end]
        if not chosen or (len(chosen) == 1 and isinstance(chosen[0], Summary)):
            continue
        estimate = MODEL_SUMMARY_ESTIMATE if inputs.summarize else max(64, covered // 20)
        if covered - estimate <= 0:
            continue
        best = end
        if total - covered + estimate <= limit:
            return end
    return best if best is not None and best <= newest else None


def _choose_in_turn_range(draft: Draft) -> list[ViewItem] | None:
    """The current turn's older steps (after the newest user message, before its last steps)."""
    users = user_positions(draft.items)
    start = users[-1] + 1 if users else 0
    steps = [i for i, it in enumerate(draft.items) if i >= start and isinstance(it, Event) and it.kind == "assistant"]
    if len(steps) <= KEEP_RECENT_STEPS:
        return None
    chosen = draft.items[start : steps[-KEEP_RECENT_STEPS]]
    if not chosen or (len(chosen) == 1 and isinstance(chosen[0], Summary)):
        return None
    return chosen
