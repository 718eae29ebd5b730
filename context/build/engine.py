"""THE builder: a pure function from the session log (and hooks) to a provider-neutral request + report.

Called before every model call inside the tool loop. Layout, for prompt-cache stability and for
attention:
  1. system prompt (+ project instructions) and tool schemas — the stable prefix;
  2. history: compaction summaries in place of masked ranges, tool results as "tool" messages;
  3. the warm block (pinned constraints, open tasks, recalled memory) right before the newest user
     message, or after the trailing tool results.
Slice enforcement first, whatever the total (context/build/slice_relief.py): tool traffic (results, and
old calls' long arguments) beyond the tools slice is pruned in the view, oldest first, down to a lower
watermark (hysteresis, so the prefix stays stable for prompt caching between cuts). Then pressure
relief, cheapest first, re-measuring after each cut and stopping as soon as it fits: prune tool
results older than the protected turns (view only) → compact the oldest turns (a summary; the caller appends the returned compaction events, the originals stay in the log) →
prune recent tool results except the newest step's → compact the current turn's older steps →
prune the newest step's results → a clear ContextOverflowError (one message alone cannot fit). Invariant (strategy "ctxagent"): count_request(request) ≤ budget.limit, and
the calibrated total fits as well. Same inputs → identical request (inspect compares a sha256).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from typing import Any

from ctxagent.context.build.cache import BuildCache, cache_for
from ctxagent.context.build.inputs import (
    CUT_STATES,
    BuildInputs,
    BuildResult,
    Draft,
    PlannedCompaction,
    Slot,
)
from ctxagent.context.build.measure import make_report
from ctxagent.context.build.render import assemble, warm_position, with_content
from ctxagent.context.build.slice_relief import enforce_tools_slice
from ctxagent.context.compact import compaction_record, user_positions
from ctxagent.context.errors import ContextOverflowError
from ctxagent.context.events import CompactionData
from ctxagent.context.history import Event, Summary, ViewItem
from ctxagent.context.ledger import Ledger, with_quotes
from ctxagent.context.memory.terms import normalize
from ctxagent.context.prune import LOW_VALUE, cleared_arguments, cleared_text, pruned_text
from ctxagent.context.request import Message, Request, ToolCall
from ctxagent.context.server_edits import SERVER_STRATEGIES
from ctxagent.context.tokens import TokenCounter, count_message

MAX_RELIEF_ROUNDS = 64  # a safety bound: each round compacts strictly more, so few are ever needed
KEEP_RECENT_STEPS = 2  # an in-turn compaction keeps the current turn's last steps verbatim
MODEL_SUMMARY_ESTIMATE = 800  # tokens a model summary is assumed to take when choosing a range
PRUNED_CHARS = 2000  # about what a pruned preview holds (the cache's size accounting)
RECALL_SHARE = 0.3  # of the warm slice at most, for memory recalled for this step (after the session
# ledger's working-memory block)


def request_sha256(body: dict[str, Any]) -> str:
    """A stable fingerprint of a request body (Request.to_dict() or a provider's wire body)."""
    data = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


def _recent_files(events: list[Event], limit: int = 10) -> list[str]:
    files: list[str] = []
    for ev in reversed(events):
        if ev.kind == "tool_result":
            files += ev.tool_result.meta.files
        elif ev.kind == "assistant":
            for call in ev.assistant.tool_calls:
                path = call.arguments.get("path")
                if isinstance(path, str):
                    files.append(path)
        if len(dict.fromkeys(files)) >= limit:
            break
    return list(dict.fromkeys(files))[:limit]


def warm_text_for(inputs: BuildInputs, events: list[Event], ledger: Ledger | None = None,
                  items: list[ViewItem] | None = None) -> tuple[str, str | None]:
    """(warm block text, note): the session ledger's working-memory block, then what the memory hook
    recalls for this step. `events`: the live events; `ledger`: theirs if already folded; `items`: the
    view, whose summaries say which messages are no longer shown (those still shown are not repeated).
    A failing memory hook is left out and the note says so."""
    if inputs.warm_override is not None:
        return inputs.warm_override, None
    ledger = ledger if ledger is not None else Ledger().feed(events)
    max_tokens = inputs.budget.base("warm")
    masked = None if items is None else [(it.first_id, it.last_id) for it in items if isinstance(it, Summary)]
    tail = ledger.tail_block(max_tokens, inputs.counter, masked)  # binding pins first: the whole share if need be
    if inputs.warm is None:
        return tail, None
    query = next((e.user.text for e in reversed(events) if e.kind == "user"), "")
    room = min(int(max_tokens * RECALL_SHARE), max_tokens - inputs.counter.count(tail))
    try:
        recalled = inputs.warm.warm_block(query, _recent_files(events), inputs.turn, room, inputs.counter)
    except Exception as exc:  # memory trouble must not stop a step
        return tail, f"memory recall failed ({type(exc).__name__}: {exc}); the session ledger alone was used"
    # the store holds this session's pins too: what the ledger shows, or left out as shown, is not repeated
    known = "\n".join(ledger.tail_lines()) if recalled and masked is not None else tail
    return "\n".join(x for x in (tail, _without_repeats(recalled, known)) if x), None


def _without_repeats(block: str, tail: str) -> str:
    """The recalled block minus lines the ledger already shows (this session's pins are in both)."""
    if not block or not tail:
        return block
    shown = {_bare(line) for line in tail.splitlines()}
    lines = block.splitlines()
    kept = [ln for ln in lines if not ln.startswith("- ") or _bare(ln) not in shown]
    return "" if all(not ln.startswith("- ") for ln in kept) else "\n".join(kept)


def _bare(line: str) -> str:
    """A block line's text without its bullet and [turn N] / [constraint t1] tag."""
    return normalize(re.sub(r"^-\s*(?:\[[^\]]*\]\s*)?", "", line))


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
    # the stub names the tool (slot.msg.name): anchor on the verbatim message too, as _pruned_memo does
    # — one cache serves several logs that agree on a prefix (the bench's strategies), so an event id
    # alone does not say which event it is
    return cache.memo(("cleared", slot.event_id, slot.msg.role), (slot.msg, slot.source, slot.spill, slot.quotes),
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
        slot = draft.slots[index]
        new_msg, new_tokens = _pruned_memo(slot, counter, cache)
        if new_tokens < slot.tokens:
            draft.replace(index, new_msg, new_tokens, "pruned")


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


def _stable_end(slots: list[Slot]) -> int:
    """Index past the part of the history the next build shows unchanged (barring a compaction)."""
    cleared = pruned = 0
    for i, s in enumerate(slots):
        if s.state == "cleared":
            cleared = i + 1
        elif s.state == "pruned":
            pruned = i + 1
    return cleared or pruned


def _finish(inputs: BuildInputs, draft: Draft, warm: str, records: list[PlannedCompaction], notes: list[str],
            cache: BuildCache) -> BuildResult:
    compaction = records[0].data if records else None
    for extra in records[1:]:
        notes.append(f"also compacted the current turn's older steps: events {extra.data.first_id}–{extra.data.last_id}")
    messages = [s.msg for s in draft.slots]
    # the cleared set only grows, oldest first (slice_relief.py): up to its newest member the history
    # stays as it is until the next cut, which starts after it. Previews (low-value results, the
    # fit-the-limit tiers) may still be cleared later, so they mark the end only while nothing is cleared
    stable = _stable_end(draft.slots)
    if draft.warm_msg is not None:
        at = warm_position(messages)
        messages.insert(at, draft.warm_msg)
        stable += at < stable
    request = Request(system=inputs.system, messages=messages, tools=list(inputs.tools), max_tokens=inputs.budget.max_output,
                      stable_messages=stable)
    report = make_report(inputs, draft, request, compaction, notes, cache=cache)
    masked = [[it.first_id, it.last_id] for it in draft.items if isinstance(it, Summary)]
    return BuildResult(
        request=request,
        report=report,
        warm_text=warm,
        compactions=list(records),
        pruned_ids=[s.msg.event_id for s in draft.slots if s.state in CUT_STATES and s.msg.event_id is not None],
        spilled_ids=[s.event_id for s in draft.slots if s.spill is not None and s.event_id is not None],
        masked=masked,
    )


def _choose_in_turn_range(draft: Draft) -> list[ViewItem] | None:
    """The current turn's older steps (after the newest user message, before its last steps)."""
    users = user_positions(draft.items)
    start = users[-1] + 1 if users else 0
    steps = [i for i in range(start, len(draft.items)) if isinstance(draft.items[i], Event) and draft.items[i].kind == "assistant"]
    if len(steps) <= KEEP_RECENT_STEPS:
        return None
    chosen = draft.items[start : steps[-KEEP_RECENT_STEPS]]
    if not chosen or (len(chosen) == 1 and isinstance(chosen[0], Summary)):
        return None
    return chosen


def _relieve(inputs: BuildInputs, events: list[Event], limit: int, warm: str, notes: list[str],
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
    for _ in range(MAX_RELIEF_ROUNDS):
        log = cache.log_state([*events, *(Event(eid, CompactionData.KIND, data.to_data())
                                          for eid, data, _ in records)])
        if inputs.warm_override is None and records:
            warm, _ = warm_text_for(inputs, log.live, log.ledger, log.items)  # the ledger holds the summaries' open tasks
        draft = assemble(list(log.items), inputs, warm, cache, log.ledger)
        enforce_tools_slice(draft, inputs.budget, lambda s: _pruned_memo(s, counter, cache),
                            lambda s: _cleared_memo(s, counter, cache), cold)
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
        break
    if draft.total() > limit:
        raise ContextOverflowError(draft.overflow_message(limit, inputs.budget))
    return draft, [PlannedCompaction(eid, data) for eid, data, _ in records], warm


def build(inputs: BuildInputs) -> BuildResult:
    if inputs.strategy in ("full", "window"):
        from ctxagent.context.build.baselines import build_baseline  # the baselines reuse this module's types

        return build_baseline(inputs)
    if inputs.strategy in SERVER_STRATEGIES:
        from ctxagent.context.build.baselines import build_server_side

        return build_server_side(inputs)
    if inputs.strategy != "ctxagent":
        raise ValueError(f"unknown strategy {inputs.strategy!r}: use 'ctxagent', 'full', 'window', "
                         + ", ".join(repr(s) for s in SERVER_STRATEGIES))
    cache = cache_for(inputs.counter, inputs.cache)
    limit = inputs.budget.effective_limit(inputs.calibration_ratio)
    events = list(inputs.events)
    notes: list[str] = []
    log = cache.log_state(events)
    warm, note = warm_text_for(inputs, log.live, log.ledger, log.items)
    if note:
        notes.append(note)
    cold = log.cold.with_build(inputs.model)  # messages that met a cold prompt cache: relief is free there
    draft, records, warm = _relieve(inputs, events, limit, warm, notes, cache, cold)
    return _finish(inputs, draft, warm, records, notes, cache)
