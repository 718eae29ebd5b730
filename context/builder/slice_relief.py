"""Slice enforcement: keep the tool traffic shown in the history within the tools slice, cheaply.

A slice over its budget is relieved first ("超出预算的层优先压缩"), before the whole request nears
W − reserve. Without this rule a 200k window keeps ~190k of stale tool output verbatim.

The rule (no model call, view only; the log is untouched):

    B     = the tools slice, Budget.base("tools"), minus the tool schemas (they count there too)
    T     = tool traffic shown: tool results, and the assistant messages that call tools (a Write's
            file content or an Edit's old/new text is tool traffic too; it lives in the hot slice)
    high  = Budget.tools_high · B      (default 0.6) relief starts when T exceeds it
    low   = Budget.tools_low  · B      (default 0.1) ... and cuts T down to about here
    q     = high − low                 the hysteresis step
    cut   = ceil((T − high) / q) · q   tokens to take out (0 while T ≤ high)

Candidates are the tool traffic older than the last `protect_turns` user turns, and — because one
agentic turn can hold a hundred steps — also older than the last `Budget.protect_steps` model steps
(default 8; 0 turns that off; the boundary advances in chunks of `Budget.step_chunk` × that many steps,
default 3 × 8: 8 to 31 steps stay verbatim, see candidate_end).
Low-value results (errors, failed searches, acknowledgements) are cut first once relief is on; then
the rest OLDEST FIRST until the savings reach `cut`. A cut CLEARS (prune.py): a result becomes one
line — what it was, read_event / read_spill, the files it named — plus the failing tests it reported
and the ledger's quotes of it; a call keeps its paths and short arguments and the head of long ones.
(Low-value results are cut to a head/tail preview first, then cleared when the walk reaches them.)
Why one line, not a head/tail preview: on a long session the previews alone grew to a third of the
history at 200k, the floor relief stopped at; a preview level before the clear level made the cut
set non-monotone (more candidates → more previews → fewer clears) and measured no better.

Where the prompt cache is cold anyway — a message that arrived more than the provider's cache TTL (prompt_cache.py) after the one
before it (an idle user, a resumed session, a long tool run), or a step for another model than the
step before it — the tool traffic shown then is cleared down to `low` at once (the request is
written to the cache in full either way), so the next jump comes later, when it would rewrite a
warm cache. The log decides (its times, its steps' models), so every later build finds the same
cold starts and keeps those cuts.

Why this shape: the builder must stay a pure function of the log (inspect re-builds any step from it,
warm cache == cold cache), so hysteresis cannot be "remember what we pruned last step". Instead the
cut is quantized: it only grows when T has grown by another q tokens, and the walk is oldest-first
over a candidate list that only grows at its end, so the pruned set only grows, in jumps. Between
jumps the request prefix is unchanged and a prompt cache serves it. (A lowest-value-first order for
the normal results would re-cut the middle whenever a new result aged into the candidates.)
Measured on the Claude Code replay at W = 200k (docs/BENCHMARKS.md): no hysteresis (low ≈ high)
gives prefix reuse 0.87; low = 0.4 gives 0.92 and fewer tokens. With clearing, a deeper and rarer cut
(high 0.6, low 0.1) is cheaper under a prompt cache still: a cut rewrites the history after it once
(1.25 × on Anthropic), a kept token is read at every later step (0.1 ×); the best high for a history
growing by g tokens a step with P tokens left after a cut is about √(2 · 12.5 · P · g) — 15–20k at
200k on Claude Code traffic, i.e. 0.6 of its 30k slice. Tool traffic does not borrow unused
warm / system share: that would grow the slice exactly when the session is long, which is when the
history should shrink. Hot has no separate target: tool traffic is what grows; user and assistant
text is small and is what the model needs verbatim.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxagent.context.builder.render import protect_from
from ctxagent.context.history import Event
from ctxagent.context.prune import LOW_VALUE

if TYPE_CHECKING:
    from ctxagent.context.budget import Budget
    from ctxagent.context.builder.cache import CacheStats
    from ctxagent.context.builder.inputs import Draft, Slot
    from ctxagent.context.builder.slot_fold import SlotFold
    from ctxagent.context.request import Message


Preview = Callable[["Slot"], "tuple[Message, int]"]


def is_tool_traffic(slot: Slot) -> bool:
    """A tool result (or synthetic result), or an assistant message that calls tools."""
    return slot.slice == "tools" or (slot.msg.role == "assistant" and bool(slot.msg.tool_calls))


def tool_traffic_tokens(draft: Draft) -> int:
    """Tokens of the tool traffic shown in the draft: results, and the assistant messages calling tools."""
    # is_tool_traffic, inline: this runs every build over every visible message
    return sum([s.tokens for s in draft.slots if s.slice == "tools" or (s.msg.tool_calls and s.msg.role == "assistant")])


def slice_cut(budget: Budget, shown: int, tool_spec_tokens: int) -> int:
    """Tokens the tools slice must give up (a multiple of the hysteresis step; 0 when within budget)."""
    slice_tokens = max(0, budget.base("tools") - tool_spec_tokens)
    high = budget.tools_high * slice_tokens
    if slice_tokens <= 0 or shown <= high:
        return 0
    step = max(1, math.ceil((budget.tools_high - budget.tools_low) * slice_tokens))
    return math.ceil((shown - high) / step) * step


def chunk_steps(protect_steps: int, step_chunk: float) -> int:
    """Steps the protected-steps boundary advances at a time: `Budget.step_chunk` × protect_steps, ≥ 1."""
    return max(1, round(protect_steps * step_chunk))


def candidate_end(draft: Draft, protect_steps: int, step_chunk: float, upto: int | None = None,
                  steps: Sequence[int] | None = None) -> int:
    """Slot index before which tool traffic may be cut: the later of the protected turns' start and the
    step boundary. The step boundary keeps the last `protect_steps` model steps and up to
    `chunk_steps` − 1 more: it advances a chunk of steps at a time, so that when the slice cannot get
    under its watermark (every candidate already cut) steps age into pruning a chunk at a time, not one
    per step, and the prefix changes once per chunk (0 steps: the turns alone decide). A cut re-writes
    the history after it, the protected steps included, so a longer chunk means fewer re-writes and more
    steps kept verbatim between them (`Budget.step_chunk`, fitted held apart: docs/BENCHMARKS.md §1).
    `upto`: the same for the history as it was when it had only its first `upto` slots (`steps`: the
    indices of every assistant slot, when the caller has them)."""
    slots = draft.slots if upto is None else draft.slots[:upto]
    end = draft.protect_from if upto is None else protect_from(slots, draft.protect_turns)
    if protect_steps <= 0:
        return end
    if steps is None:
        steps = [i for i, s in enumerate(slots) if s.msg.role == "assistant"]
    elif upto is not None:
        steps = steps[:bisect.bisect_left(steps, upto)]
    chunk = chunk_steps(protect_steps, step_chunk)
    aged = (len(steps) - protect_steps) // chunk * chunk
    return max(end, steps[aged]) if aged > 0 else end


@dataclass(frozen=True)
class Walk:
    """Where a walk without cold starts stopped: its candidates, the position in them its clearing pass
    stopped at, and what that pass saved. A later walk over the same slots with a larger cut or a later
    end goes on from there (`_resume`)."""

    cut: int
    end: int
    candidates: tuple[int, ...]
    stop: int
    cleared: int  # tokens the clearing pass saved


@dataclass(frozen=True)
class Enforced:
    """One enforcement, remembered: what it was a function of (besides the slots), the slots it started
    from, what it made of them, the tokens that saved, how many messages it cut, and where its walk
    stopped (None: it had cold starts, and is only reused as a whole)."""

    key: tuple[Any, ...]
    before: list[Slot]
    after: list[Slot]
    saved: int
    pruned: int
    walk: Walk | None = None


ENFORCED_KEPT = 4  # enforcements remembered: the log, plus a few branches (relief rounds, replayed strategies)


def enforce_tools_slice(draft: Draft, budget: Budget, prune_result: Preview, clear: Preview,
                        cold: Collection[int] = (), memo: list[Enforced] | None = None,
                        stats: CacheStats | None = None, fold: SlotFold | None = None) -> int:
    """Cut old tool traffic until the tools slice gave up its quantized share; returns how many
    messages were cut. `prune_result` gives a result's memoized head/tail preview (low-value results),
    `clear` a result's or a call's one-line cut; `cold`: the ids of messages that met a cold cache.

    `memo` (the BuildCache's) makes a step between two jumps cost O(1) per message: every cut falls
    before the candidates' end, and what the walks decide is a function of the slots before it, of
    `cut`, of the cold starts and of the budget's numbers. So when an earlier enforcement started from
    slots that are a prefix of these (equal, which for the shared slots of a resumed render is identity)
    with the same cut, end and cold starts, its result is this one's, and the slots after its prefix
    are left as they are. At a jump (a larger cut, or a later end) without cold starts, the walk goes on
    from where the earlier one stopped: its candidates are a prefix of these, and the passes over them
    decide the same until the earlier cut was reached (`_resume`). `fold`: the fold of the draft's
    slots (slot_fold.py), when the caller has it: their tool traffic and steps without a walk."""
    shown = tool_traffic_tokens(draft) if fold is None else fold.traffic
    cut = slice_cut(budget, shown, draft.tool_spec_tokens)
    starts = cold_starts(draft, cold)
    if cut <= 0 and not starts:
        return 0
    end = candidate_end(draft, budget.protect_steps, budget.step_chunk, steps=fold.steps if fold is not None else None)
    rest = (tuple(starts), budget.tools_low, budget.base("tools"), draft.tool_spec_tokens,
            budget.protect_steps, budget.step_chunk, draft.protect_turns)
    key = (cut, end, *rest)
    resumable: Enforced | None = None
    if memo is not None:
        for seen in memo:
            n = len(seen.before)
            if n > len(draft.slots) or seen.key[2:] != rest:
                continue
            same = seen.key == key
            later = (not same and seen.walk is not None and seen.walk.cut <= cut and seen.walk.end <= end
                     and (resumable is None or n > len(resumable.before)))
            if (same or later) and draft.slots[:n] == seen.before:
                if same:
                    draft.replace_prefix(seen.after, seen.saved)
                    return seen.pruned
                resumable = seen
        before = list(draft.slots)
    walk: Walk | None
    if resumable is not None and resumable.walk is not None:
        draft.replace_prefix(resumable.after, resumable.saved)
        pruned, walk = _resume(draft, prune_result, clear, cut, end, resumable.walk)
        pruned += resumable.pruned
        if stats is not None:
            stats.slice_resumes += 1
    else:
        pruned, walk = _enforce(draft, budget, prune_result, clear, cut, end, starts)
        if stats is not None:
            stats.slice_walks += 1
    if memo is not None:
        after = draft.slots[:len(before)]
        saved = sum(s.tokens for s in before) - sum(s.tokens for s in after)
        memo[:] = [Enforced(key, before, after, saved, pruned, walk), *memo][:ENFORCED_KEPT]
    return pruned


def _candidates(draft: Draft, lo: int, hi: int) -> list[int]:
    """Slot indices in [lo, hi) a walk may cut: tool traffic shown whole (verbatim or spilled)."""
    slots = draft.slots
    return [i for i in range(lo, hi) if is_tool_traffic(slots[i]) and slots[i].state in ("verbatim", "spilled")
            and slots[i].event_id is not None]


def _enforce(draft: Draft, budget: Budget, prune_result: Preview, clear: Preview, cut: int, end: int,
             starts: list[int]) -> tuple[int, Walk | None]:
    candidates = _candidates(draft, 0, end) if end else []
    pruned, saved = _clear_at_cold_starts(draft, budget, clear, candidates, starts)
    pruned += _prune_low_value(draft, prune_result, candidates)
    n, saved, stop = _clear_oldest(draft, clear, candidates, 0, saved, cut)
    return pruned + n, (Walk(cut, end, tuple(candidates), stop, saved) if not starts else None)


def _resume(draft: Draft, prune_result: Preview, clear: Preview, cut: int, end: int, walk: Walk) -> tuple[int, Walk]:
    """The walk of `_enforce` (no cold starts) for `cut` and `end`, from `walk`'s, whose slots (and
    cuts) the draft shows already: the new candidates (from the old end on) get the low-value pass,
    then the clearing pass goes on from where it stopped. The old candidates' passes decide what they
    decided before: the new candidates all come after them."""
    new = _candidates(draft, walk.end, end) if end > walk.end else []
    pruned = _prune_low_value(draft, prune_result, new)
    candidates = [*walk.candidates, *new]
    n, saved, stop = _clear_oldest(draft, clear, candidates, walk.stop, walk.cleared, cut)
    return pruned + n, Walk(cut, end, tuple(candidates), stop, saved)


def _prune_low_value(draft: Draft, prune_result: Preview, candidates: list[int]) -> int:
    """Low-value results first: cheap, and their savings do not move the frontier. Returns the messages cut."""
    pruned = 0
    for i in candidates:
        if draft.slots[i].is_tool_result and draft.slots[i].rank == LOW_VALUE and draft.slots[i].state != "cleared":
            pruned += _cut(draft, i, prune_result)[0]
    return pruned


def _clear_oldest(draft: Draft, clear: Preview, candidates: list[int], start: int, saved: int,
                  cut: int) -> tuple[int, int, int]:
    """Clear candidates[start:] oldest first until `saved` reaches `cut`: (messages cut, saved, the
    position it stopped at)."""
    pruned = 0
    stop = len(candidates)
    for pos in range(start, len(candidates)):
        if saved >= cut:
            stop = pos
            break
        i = candidates[pos]
        state = draft.slots[i].state
        if state == "cleared":  # clearing a cleared message again changes nothing: its stub is its own clear
            continue
        n, delta = _cut(draft, i, clear, "cleared")
        pruned += 0 if state == "pruned" else n
        saved += delta
    return pruned, saved, stop


def cold_starts(draft: Draft, cold: Collection[int]) -> list[int]:
    """Item indices of the messages in `cold` (event ids, build_cache.ColdTrail) the draft shows."""
    if not cold:
        return []
    return [i for i, it in enumerate(draft.items) if isinstance(it, Event) and it.id in cold]


def _clear_at_cold_starts(draft: Draft, budget: Budget, clear: Preview, candidates: list[int],
                          starts: list[int]) -> tuple[int, int]:
    """Relief where it is free: at each cold start the request was written to the cache in full anyway,
    so the tool traffic shown then is cleared down to the low watermark there and then, not later
    when a cut would rewrite a warm cache. Recomputed from the log at every build (the times are in
    it), so later builds keep these cuts: oldest first, they only grow. Returns (messages cut, tokens saved)."""
    if not starts or not candidates:
        return 0, 0
    low = budget.tools_low * max(0, budget.base("tools") - draft.tool_spec_tokens)
    item_at: list[int] = []  # the item each slot renders (a synthetic result goes with the call before it)
    traffic = [0]  # tool traffic of the first k slots, before any cut
    for s in draft.slots:
        item_at.append(s.item_index if s.item_index >= 0 else (item_at[-1] if item_at else -1))
        traffic.append(traffic[-1] + (s.tokens if is_tool_traffic(s) else 0))
    steps = [i for i, s in enumerate(draft.slots) if s.msg.role == "assistant"]
    pruned = saved = k = 0  # the cuts are a prefix of `candidates`: each cold start goes on from the last
    for item in starts:
        upto = bisect.bisect_right(item_at, item)
        end = candidate_end(draft, budget.protect_steps, budget.step_chunk, upto, steps)
        need = traffic[upto] - low - saved
        while need > 0 and k < len(candidates) and candidates[k] < end:
            n, delta = _cut(draft, candidates[k], clear, "cleared")
            pruned += n
            saved += delta
            need -= delta
            k += 1
    return pruned, saved


def _cut(draft: Draft, index: int, preview: Preview, state: str = "pruned") -> tuple[int, int]:
    delta = draft.cut(index, preview, state)
    return (1, delta) if delta else (0, 0)
