"""SlotFold: what a build reads off its slots in one pass, folded over a prefix and extended with the new
slots only.

Every build walks its slots several times: the tool traffic the slice rule measures, the old images
to stub, the request's messages and the index of its stable part, the cut and spilled ids, the
report's totals and the verbatim share of the loss. Each walk is a function of the slots alone, and
slots are frozen and shared between builds (a resumed render keeps the rendered prefix's objects, a
cut is memoized as the same new slot), so the slots of one build are, up to the newest ones or the
first one cut since, the slots of the build before. `BuildCache.slot_fold` keeps a few folds and
extends the longest one whose slots are a prefix of these (identical, else equal: the fold is a
function of the slots' values, so an equal prefix folds the same). The numbers are the same as a
walk from the first slot: tests/context/test_build_cache.py compares warm and cold builds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ctxagent.context.builder.cache import BuildCache, _is_prefix
from ctxagent.context.builder.inputs import CUT_STATES

if TYPE_CHECKING:
    from ctxagent.context.builder.inputs import Slot
    from ctxagent.context.request import Message


@dataclass(frozen=True)
class SlotFold:
    """The fold of `slots` (a private copy of the prefix it describes). Never mutated: `feed` returns a new one."""

    slots: list[Slot] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)  # each slot's message, in order
    cleared_end: int = 0  # the index past the last cleared slot (0: none)
    pruned_end: int = 0  # ... past the last pruned one
    cut_ids: list[int] = field(default_factory=list)  # event ids of the slots showing a cut (CUT_STATES)
    spilled_ids: list[int] = field(default_factory=list)  # event ids of the spilled results shown
    image_slots: tuple[int, ...] = ()  # indices of the slots whose message has images
    traffic: int = 0  # tool traffic tokens: results, and the assistant messages calling tools (slice_relief.py)
    hot: int = 0  # tokens of the "hot" slice's slots
    tools: int = 0  # tokens of the "tools" slice's slots
    largest: int = 0  # the largest "tools" slot
    spilled: int = 0  # slots with a spill handle
    cut: int = 0  # slots showing a cut
    oldest_turn: int | None = None  # the turn of the first user message shown
    verbatim_full: int = 0  # verbatim size of the events shown verbatim (the loss %'s shown part)
    tokens: int = 0  # all the slots' tokens
    steps: tuple[int, ...] = ()  # indices of the assistant slots (the model's steps: slice_relief.candidate_end)

    def feed(self, tail: list[Slot]) -> SlotFold:
        """This fold extended with `tail`, the slots after its prefix."""
        messages = list(self.messages)
        cut_ids, spilled_ids, images = list(self.cut_ids), list(self.spilled_ids), list(self.image_slots)
        cleared_end, pruned_end = self.cleared_end, self.pruned_end
        traffic, hot, tools, largest = self.traffic, self.hot, self.tools, self.largest
        spilled, cut, oldest, verbatim_full = self.spilled, self.cut, self.oldest_turn, self.verbatim_full
        tokens, steps = self.tokens, list(self.steps)
        base = len(self.slots)
        for i, s in enumerate(tail, base):
            msg = s.msg
            messages.append(msg)
            tokens += s.tokens
            if msg.role == "assistant":
                steps.append(i)
            state = s.state
            if state in CUT_STATES:
                cut += 1
                if state == "cleared":
                    cleared_end = i + 1
                else:
                    pruned_end = i + 1
                if msg.event_id is not None:
                    cut_ids.append(msg.event_id)
            elif state == "verbatim" and s.event_id is not None:
                verbatim_full += s.full_tokens
            if s.spill is not None:
                spilled += 1
                if s.event_id is not None:
                    spilled_ids.append(s.event_id)
            if msg.images:
                images.append(i)
            if s.slice == "tools":
                traffic += s.tokens
                tools += s.tokens
                largest = max(largest, s.tokens)
            else:
                if s.slice == "hot":
                    hot += s.tokens
                if msg.tool_calls and msg.role == "assistant":
                    traffic += s.tokens
            if oldest is None and msg.role == "user" and msg.kind == "message" and not s.is_tool_result:
                oldest = s.turn
        return SlotFold([*self.slots, *tail], messages, cleared_end, pruned_end, cut_ids, spilled_ids, tuple(images),
                        traffic, hot, tools, largest, spilled, cut, oldest, verbatim_full, tokens, tuple(steps))

    @property
    def stable(self) -> int:
        """The index past the part of the history the next build shows unchanged, barring a compaction:
        the last cleared slot, else the last pruned one (engine.py says why)."""
        return self.cleared_end or self.pruned_end


EMPTY_FOLD = SlotFold()


FOLDS_KEPT = 6  # a build folds its rendered slots and its relieved ones; a few branches besides


def fold_slots(slots: list[Slot], cache: BuildCache | None = None) -> SlotFold:
    """The fold of `slots`: with a cache, extended from the longest fold it keeps (`BuildCache.folds`)
    whose slots are a prefix of these."""
    if cache is None:
        return EMPTY_FOLD.feed(list(slots))
    best: SlotFold | None = None
    for seen in cache.folds:
        if (best is None or len(seen.slots) > len(best.slots)) and _is_prefix(seen.slots, slots):
            best = seen
    if best is not None and len(best.slots) == len(slots):
        return best
    base = best or EMPTY_FOLD
    fold = base.feed(slots[len(base.slots):])
    cache.folds[:] = [fold, *(f for f in cache.folds if f is not best)][:FOLDS_KEPT]
    return fold
