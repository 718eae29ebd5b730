"""The builder's data shapes, in a leaf module so the builder and its helpers (render, measure,
strategies, slice relief) import them without a cycle.

- `BuildInputs`: everything one build reads (the log so far, system prompt, tools, budget, counter…).
  `BuildParams` (context/events.py) is its scalars as the log records them with each step:
  `inputs.params()` writes them, `BuildInputs.from_params(...)` reads them back — the two directions
  in one place, so what `inspect` rebuilds is what was built.
- `Slot` / `Draft`: the working draft — each visible message measured once, replaced (never changed
  in place) when a relief tier cuts it, with a running total.
- `PlannedCompaction` / `BuildResult`: what a build returns. A compaction the build made carries the
  event id it planned for it; the caller appends it with `SessionLog.append(data, expect_id=…)`, which
  refuses a mismatch, so the ranges and ids the request was built from are the ones in the log.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ctxagent.context.budget import STEP_CHUNK_BEFORE_RECORDED, TASK_STATE_SHARE, Budget
from ctxagent.context.builder.cache import BuildCache
from ctxagent.context.events import BuildParams, CompactionData
from ctxagent.context.history import Event, ViewItem
from ctxagent.context.prompt_cache import CacheRules, rules_for
from ctxagent.context.report import ContextReport
from ctxagent.context.request import Message, Request, ToolSpec
from ctxagent.context.superseded import superseded_results
from ctxagent.context.tokens import TokenCounter


class WarmProvider(Protocol):
    def warm_block(self, query: str, files: list[str], turn: int, max_tokens: int, counter: TokenCounter) -> str: ...


@dataclass
class BuildInputs:
    events: list[Event]  # the whole session log so far (view() applied inside)
    system: str  # system prompt incl. project instructions
    tools: list[ToolSpec]
    budget: Budget
    counter: TokenCounter  # a CachedCounter
    step: int
    turn: int
    strategy: str = "ctxagent"  # one of STRATEGIES (context/strategies.py)
    calibration_ratio: float = 1.0
    warm: WarmProvider | None = None  # memory hook; None = the session ledger's block alone (build/warm.py)
    warm_override: str | None = None  # exact warm text to use (inspect re-builds with it)
    summarize: Callable[[str], str] | None = None  # model call for compaction; None = extractive
    allow_compaction: bool = True
    protect_turns: int = 2
    thresholds: tuple[float, float] = (0.75, 0.90)
    focus: str | None = None
    task_state_share: float = TASK_STATE_SHARE  # of the limit at most for the verbatim task state (builder/task_state.py)
    model: str = ""  # the model this request is for: a different one than the last step's has a cold prompt cache
    cache_ttl: str = "5m"  # the prompt cache's TTL option ("5m" | "1h"): with the model, its rules (prompt_cache.py)
    images: bool = True  # the model takes images (its provider's token rule: context/images.py); False: text stubs
    # per-event work remembered across builds (the agent keeps one per session); None = the cache tied
    # to `counter`. The result is the same with or without it, warm or cold.
    cache: BuildCache | None = None

    def params(self, tokenizer: str | None = None) -> BuildParams:
        """Every scalar this build uses, as a step's `context_report` records them. `tokenizer`: the
        counter's family as configured (default: the counter's name)."""
        b = self.budget
        return BuildParams(
            window=b.window, fractions=b.fractions, max_output=b.max_output, profile=b.profile,
            tools_high=b.tools_high, tools_low=b.tools_low, protect_steps=b.protect_steps, step_chunk=b.step_chunk,
            strategy=self.strategy, protect_turns=self.protect_turns, thresholds=self.thresholds,
            tokenizer=tokenizer or self.counter.name, task_state_share=self.task_state_share,
            cache_ttl=self.cache_ttl,
        )

    @property
    def cache_rules(self) -> CacheRules:
        """The prompt-cache rules this request meets: its provider's, with the configured TTL."""
        return rules_for(self.model, self.cache_ttl)

    @classmethod
    def from_params(cls, params: BuildParams, *, events: list[Event], system: str, tools: list[ToolSpec],
                    counter: TokenCounter, step: int, turn: int, calibration_ratio: float = 1.0,
                    warm_override: str | None = None, model: str = "", allow_compaction: bool = False,
                    images: bool = True) -> BuildInputs:
        """The inputs a recorded build used, from its `BuildParams` and the log around it (`inspect`).
        A log written before the slice rule was recorded rebuilds with the defaults it had then."""
        slice_rule = {k: v for k in ("tools_high", "tools_low", "protect_steps") if (v := getattr(params, k)) is not None}
        slice_rule["step_chunk"] = STEP_CHUNK_BEFORE_RECORDED if params.step_chunk is None else params.step_chunk
        budget = Budget(params.window, fractions=params.fractions, max_output=params.max_output, profile=params.profile,
                        **slice_rule)
        return cls(events=events, system=system, tools=tools, budget=budget, counter=counter, step=step, turn=turn,
                   strategy=params.strategy, calibration_ratio=calibration_ratio, warm_override=warm_override,
                   summarize=None, allow_compaction=allow_compaction, protect_turns=params.protect_turns,
                   thresholds=params.thresholds, model=model, task_state_share=params.task_state_share,
                   cache_ttl=params.cache_ttl, images=images)


@dataclass(frozen=True)
class PlannedCompaction:
    event_id: int  # the id the log gives it when appended next (SessionLog.append checks it)
    data: CompactionData


@dataclass
class BuildResult:
    request: Request
    report: ContextReport
    warm_text: str  # the warm block as sent ("" if none)
    # EVERY compaction to append, in this order (normally one; a second appears only when the current
    # turn's own older steps had to be summarized in the same build)
    compactions: list[PlannedCompaction] = field(default_factory=list)
    pruned_ids: list[int] = field(default_factory=list)
    spilled_ids: list[int] = field(default_factory=list)
    masked: list[list[int]] = field(default_factory=list)

    @property
    def compaction(self) -> CompactionData | None:
        """The first compaction this build made, if any."""
        return self.compactions[0].data if self.compactions else None


CUT_STATES = ("pruned", "cleared")  # a slot showing a cut of its message: a preview, or (deeper) a one-line stub


@dataclass(frozen=True)
class Slot:
    msg: Message
    tokens: int
    slice: str  # "hot" | "tools"
    state: str  # "verbatim" | "spilled" | "pruned" | "cleared" | "summary" | "shortened" (a summary cut) | "synthetic"
    turn: int
    item_index: int  # position in Draft.items (-1 for synthetic messages)
    is_tool_result: bool = False
    rank: int = 1
    source: str = ""  # a tool result's text as logged (what pruning cuts from)
    spill: dict[str, Any] | None = None
    event_id: int | None = None
    full_tokens: int = 0  # the event's verbatim size (spilled: its original size), for loss %
    quotes: tuple[str, ...] = ()  # the session ledger's requirement lines from this result (shown when it is cut)

    def replaced(self, msg: Message, tokens: int, state: str) -> Slot:
        """This slot showing `msg` instead (slots are shared between builds, so never changed in place).
        Spelled out rather than dataclasses.replace: it runs for every pruned result of every build."""
        return Slot(msg, tokens, self.slice, state, self.turn, self.item_index, self.is_tool_result, self.rank,
                    self.source, self.spill, self.event_id, self.full_tokens, self.quotes)


@dataclass
class Draft:
    items: list[ViewItem]
    slots: list[Slot]
    fixed: int  # request overhead + system + tool schemas
    system_tokens: int
    tool_spec_tokens: int
    warm_msg: Message | None
    warm_tokens: int
    protect_from: int  # slot index where the protected recent turns start
    protect_turns: int = 2  # how many recent user turns protect_from protects (a prefix's is recomputed)
    # cuts remembered across builds (BuildCache.cuts): (id(slot), state) -> (slot, the slot cut, or None when the
    # cut is no smaller). Slots are shared between builds, so the same slot object is cut the same way again
    cuts: dict[tuple[int, str], tuple[Slot, Slot | None]] | None = field(default=None, repr=False)
    reply_tokens: int | None = None  # the reply's reserve yielded (relief's last tier): the request asks for this many
    known_sum: int | None = field(default=None, repr=False)  # sum of the slots' tokens, when the caller has it
    _sum: int = field(default=0)
    _stale: set[int] | None = field(default=None)  # superseded tool results, computed once per draft

    def stale(self) -> set[int]:
        """Ids of tool results a later step replaced (items never change within a draft)."""
        if self._stale is None:
            self._stale = superseded_results(self.items)
        return self._stale

    def __post_init__(self) -> None:
        self._sum = sum(s.tokens for s in self.slots) if self.known_sum is None else self.known_sum

    def total(self) -> int:
        return self.fixed + self._sum + self.warm_tokens

    def replace(self, index: int, msg: Message, tokens: int, state: str) -> None:
        slot = self.slots[index]
        self._sum += tokens - slot.tokens
        self.slots[index] = slot.replaced(msg, tokens, state)

    def cut(self, index: int, preview: Callable[[Slot], tuple[Message, int]], state: str) -> int:
        """Show slot `index` as `preview` makes it, in `state`, when that is smaller; the tokens saved (0:
        left as it was). A slot already cut this way in an earlier build is looked up, not recomputed."""
        slot = self.slots[index]
        key = (id(slot), state)
        memo = self.cuts
        hit = memo.get(key) if memo is not None else None
        if hit is not None and hit[0] is slot:  # the memo holds the slot, so its id is not reused meanwhile
            new = hit[1]
        else:
            msg, tokens = preview(slot)
            new = slot.replaced(msg, tokens, state) if tokens < slot.tokens else None
            if memo is not None:
                memo[key] = (slot, new)
        if new is None:
            return 0
        self._sum += new.tokens - slot.tokens
        self.slots[index] = new
        return slot.tokens - new.tokens

    def replace_prefix(self, slots: list[Slot], saved: int) -> None:
        """Show `slots` in place of the first len(slots) slots, which saves `saved` tokens."""
        self.slots[:len(slots)] = slots
        self._sum -= saved

    def last_step_start(self) -> int:
        for i in range(len(self.slots) - 1, -1, -1):
            if self.slots[i].msg.role == "assistant":
                return i
        return len(self.slots)

    def tokens_before_item(self, end: int) -> int:
        """Tokens of the messages rendering items[:end] (synthetic results go with their assistant message)."""
        n = 0
        for s in self.slots:
            if s.item_index >= end:
                break
            n += s.tokens
        return n

    def overflow_message(self, budget: Budget, ratio: float = 1.0) -> str:
        """Why the request cannot fit, in the provider's tokens (the local count × `ratio`), the unit
        of the window and the reserve it is compared with."""
        ratio = ratio if ratio and ratio > 0 else 1.0

        def provider(tokens: int) -> int:
            return math.ceil(tokens * ratio)

        biggest = max(self.slots, key=lambda s: s.tokens, default=None)
        what = ""
        if biggest is not None:
            role = "tool result" if biggest.is_tool_result else f"{biggest.msg.role} message"
            ev = f" (event {biggest.msg.event_id})" if biggest.msg.event_id is not None else ""
            what = f" The largest item is a {role}{ev} of {provider(biggest.tokens):,} tokens."
        needed = provider(self.total())
        if needed <= budget.limit:  # a ratio under 1: the local count is held to the limit as well
            needed_text = f"{needed:,} tokens (and {self.total():,} by the local count, which is held to the limit too)"
        else:
            needed_text = f"{needed:,} tokens"
        return (
            f"the request cannot fit the context window: it still needs {needed_text} after pruning and "
            f"compaction, but the limit is {budget.limit:,} (window {budget.window:,} − reserve {budget.reserve:,} for the reply; "
            f"system prompt and tool schemas alone take {provider(self.fixed):,}).{what} Shorten the message, start a new "
            f"session (/new), or use a model with a larger window. (Tokens as the provider counts them.)"
        )
