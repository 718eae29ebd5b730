"""Baseline strategies for comparison (benchmarks, `--strategy`): "full" and "window", and the
providers' own server-side context management ("anthropic-clear", "anthropic-compact").

full    everything verbatim; may exceed the window — the report says so, nothing is raised.
window  the classic sliding window: history ≤ 60 % of W, each message capped at 4,000 tokens,
        at least 3 rounds kept, oldest rounds dropped first. No warm block, no summaries made.
anthropic-clear / anthropic-compact
        the history as "full", with the server's edits asked for (`Request.server_edits`, rules and
        defaults in context/server_edits.py); the server relieves what it receives. The request
        still never exceeds the window: when the whole history is over the limit, ctxagent's own
        relief (prune, compact) builds that step instead, and the report says so.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from functools import partial

from ctxagent.context.builder.cache import BuildCache, cache_for
from ctxagent.context.builder.inputs import CUT_STATES, BuildInputs, BuildResult, Draft, Slot
from ctxagent.context.builder.measure import make_report
from ctxagent.context.builder.render import assemble, with_content
from ctxagent.context.history import Summary
from ctxagent.context.request import Message, Request
from ctxagent.context.server_edits import server_edits_for
from ctxagent.context.spill import head_tail
from ctxagent.context.tokens import TokenCounter, count_message

WINDOW_HISTORY_SHARE = 0.60
WINDOW_MESSAGE_CAP = 4000
WINDOW_MIN_ROUNDS = 3


def _capped(slot: Slot, counter: TokenCounter) -> tuple[Message, int]:
    head, tail, cut = head_tail(slot.msg.content, counter, WINDOW_MESSAGE_CAP * 2 // 3, WINDOW_MESSAGE_CAP // 4,
                                max_head_lines=10_000, max_tail_lines=10_000)
    msg = with_content(slot.msg, "\n".join([*head, f"[… {cut} lines truncated …]", *tail]))
    return msg, count_message(msg, counter)


def _cap_messages(draft: Draft, inputs: BuildInputs, cache: BuildCache) -> int:
    capped = 0
    for i, slot in enumerate(draft.slots):
        if slot.tokens <= WINDOW_MESSAGE_CAP:
            continue
        # a function of the verbatim message (memoized per event), so remembered across builds
        msg, n = cache.memo(("capped", slot.event_id, slot.msg.role), slot.msg,
                            partial(_capped, slot, inputs.counter),
                            kind="prunes", chars=WINDOW_MESSAGE_CAP * 4)
        draft.replace(i, msg, n, "pruned")
        capped += 1
    return capped


def _drop_old_rounds(draft: Draft, budget_tokens: int) -> int:
    """Drop whole rounds (a user message and what follows it) from the front; keep ≥ 3 rounds."""
    starts = [i for i, s in enumerate(draft.slots) if s.msg.role == "user" and s.msg.kind == "message" and not s.is_tool_result]
    if not starts:
        return 0
    history = sum(s.tokens for s in draft.slots)
    drop_until = 0
    rounds_left = len(starts)
    # anything before the first user message (e.g. an old summary) goes first
    cut_points = ([starts[0]] if starts[0] > 0 else []) + starts[1:]
    for cut in cut_points:
        if history <= budget_tokens or rounds_left <= WINDOW_MIN_ROUNDS:
            break
        history -= sum(s.tokens for s in draft.slots[drop_until:cut])
        if cut in starts:
            rounds_left -= 1
        drop_until = cut
    dropped = drop_until
    if dropped:
        kept = draft.slots[drop_until:]
        first_item = kept[0].item_index if kept else len(draft.items)
        draft.slots[:] = kept
        draft.items[:] = draft.items[first_item:] if first_item >= 0 else draft.items
        draft._sum = sum(s.tokens for s in draft.slots)
    return dropped


def build_baseline(inputs: BuildInputs) -> BuildResult:
    cache = cache_for(inputs.counter, inputs.cache)
    items = list(cache.log_state(list(inputs.events)).items)
    draft = assemble(items, inputs, "", cache)
    notes: list[str] = []
    if inputs.strategy == "window":
        capped = _cap_messages(draft, inputs, cache)
        dropped = _drop_old_rounds(draft, int(WINDOW_HISTORY_SHARE * inputs.budget.window))
        if capped:
            notes.append(f"window: {capped} message(s) capped at {WINDOW_MESSAGE_CAP} tokens")
        if dropped:
            notes.append(f"window: {dropped} oldest message(s) dropped (silently lost to the model)")
    calibrated = math.ceil(draft.total() * (inputs.calibration_ratio if inputs.calibration_ratio > 0 else 1.0))
    if calibrated > inputs.budget.limit:  # in the provider's tokens, the unit of the limit
        notes.append(f"over the limit: {calibrated:,} > {inputs.budget.limit:,} tokens (this strategy does not relieve pressure)")
    messages = [s.msg for s in draft.slots]
    request = Request(system=inputs.system, messages=messages, tools=list(inputs.tools), max_tokens=inputs.budget.max_output)
    report = make_report(inputs, draft, request, None, notes, strategy=inputs.strategy,
                         system_in_window=draft.total() <= inputs.budget.window, cache=cache)
    return BuildResult(
        request=request,
        report=report,
        warm_text="",
        pruned_ids=[s.event_id for s in draft.slots if s.state in CUT_STATES and s.event_id is not None],
        spilled_ids=[s.event_id for s in draft.slots if s.spill is not None and s.event_id is not None],
        masked=[[it.first_id, it.last_id] for it in draft.items if isinstance(it, Summary)],
    )


def build_server_side(inputs: BuildInputs, fallback: Callable[[BuildInputs], BuildResult]) -> BuildResult:
    """The history as "full", asking the provider for its own context management; over the limit,
    `fallback` (the ctxagent strategy, which dispatch passes) builds this step: a server can only edit
    what it is sent, and a request over the window is refused before any edit."""
    limit = inputs.budget.effective_limit(inputs.calibration_ratio)
    result = build_baseline(dataclasses.replace(inputs, strategy="full"))
    if result.report.total > limit:
        whole, local = result.report.calibrated_total, result.report.total
        size = f"{whole:,} tokens" if whole > inputs.budget.limit else f"{local:,} tokens by the local count"
        result = fallback(dataclasses.replace(inputs, strategy="ctxagent"))
        result.report.notes.append(
            f"{inputs.strategy}: the whole history ({size}) is over the limit ({inputs.budget.limit:,}); "
            "ctxagent's own relief built this step, the server's edits apply to what is sent")
    else:
        result.report.notes[:] = [n for n in result.report.notes if not n.startswith("over the limit")]
    result.request.server_edits = server_edits_for(inputs.strategy, inputs.budget.window)
    result.report.strategy = inputs.strategy
    return result
