"""Render a history view into measured request messages (the builder's working draft).

Every message is counted once with `count_message`, and remembered in the BuildCache under its
event id, so the next build renders only what is new: it resumes from the longest rendered prefix of
the view, and items it must render again (after a compaction changed the view) are memo hits. Slots
are frozen so that rendered prefixes can be shared between builds; the draft replaces a slot to
prune it and keeps a running total, so each cut is re-measured in O(1).

Repairs that keep a request valid for every provider, deterministically: an assistant tool call
with no result right after it gets a synthetic error result; a tool result whose call is not in
view (e.g. masked) is shown as a user-side note instead of a dangling "tool" message.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxagent.context.build_cache import BuildCache, RenderState
from ctxagent.context.history import Event, Summary, ViewItem
from ctxagent.context.prune import value_rank
from ctxagent.context.request import Message, ToolCall
from ctxagent.context.superseded import superseded_results
from ctxagent.context.tokens import (
    REQUEST_OVERHEAD,
    TokenCounter,
    count_message,
)

if TYPE_CHECKING:
    from ctxagent.context.budget import Budget
    from ctxagent.context.builder import BuildInputs

SUMMARY_HEADER = "[Summary of earlier conversation (events {first}–{last}); the original messages are kept in the session log]"
MISSING_RESULT = "[no result recorded for this tool call: it was interrupted or cancelled]"


@dataclass(frozen=True)
class Slot:
    msg: Message
    tokens: int
    slice: str  # "hot" | "tools"
    state: str  # "verbatim" | "spilled" | "pruned" | "summary" | "synthetic"
    turn: int
    item_index: int  # position in Draft.items (-1 for synthetic messages)
    is_tool_result: bool = False
    rank: int = 1
    source: str = ""  # a tool result's text as logged (what pruning cuts from)
    spill: dict[str, Any] | None = None
    event_id: int | None = None
    full_tokens: int = 0  # the event's verbatim size (spilled: its original size), for loss %

    def replaced(self, msg: Message, tokens: int, state: str) -> Slot:
        """This slot showing `msg` instead (slots are shared between builds, so never changed in place).
        Spelled out rather than dataclasses.replace: it runs for every pruned result of every build."""
        return Slot(msg, tokens, self.slice, state, self.turn, self.item_index, self.is_tool_result, self.rank,
                    self.source, self.spill, self.event_id, self.full_tokens)


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
    _sum: int = field(default=0)
    _stale: set[int] | None = field(default=None)  # superseded tool results, computed once per draft

    def stale(self) -> set[int]:
        """Ids of tool results a later step replaced (items never change within a draft)."""
        if self._stale is None:
            self._stale = superseded_results(self.items)
        return self._stale

    def __post_init__(self) -> None:
        self._sum = sum(s.tokens for s in self.slots)

    def total(self) -> int:
        return self.fixed + self._sum + self.warm_tokens

    def replace(self, index: int, msg: Message, tokens: int, state: str) -> None:
        slot = self.slots[index]
        self._sum += tokens - slot.tokens
        self.slots[index] = slot.replaced(msg, tokens, state)

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

    def overflow_message(self, limit: int, budget: Budget) -> str:
        biggest = max(self.slots, key=lambda s: s.tokens, default=None)
        what = ""
        if biggest is not None:
            role = "tool result" if biggest.is_tool_result else f"{biggest.msg.role} message"
            ev = f" (event {biggest.msg.event_id})" if biggest.msg.event_id is not None else ""
            what = f" The largest item is a {role}{ev} of {biggest.tokens:,} tokens."
        return (
            f"the request cannot fit the context window: it still needs {self.total():,} tokens after pruning and "
            f"compaction, but the limit is {limit:,} (window {budget.window:,} − reserve {budget.reserve:,} for the reply; "
            f"system prompt and tool schemas alone take {self.fixed:,}).{what} Shorten the message, start a new "
            f"session (/new), or use a model with a larger window."
        )


def warm_position(messages: list[Message]) -> int:
    """Right before the newest user message if the history ends with one; else after the trailing tool results."""
    if messages and messages[-1].role == "user" and messages[-1].kind == "message":
        return len(messages) - 1
    return len(messages)


def _spill_meta(ev: Event) -> dict[str, Any] | None:
    spill = ev.data.get("spill") or (ev.data.get("meta") or {}).get("spill")
    return dict(spill) if isinstance(spill, dict) and spill.get("handle") else None


def _render_summary(it: Summary, counter: TokenCounter) -> tuple[Message, int]:
    msg = Message(role="user", content=SUMMARY_HEADER.format(first=it.first_id, last=it.last_id) + "\n" + it.text,
                  kind="summary", event_id=it.event_id)
    return msg, count_message(msg, counter)


def _render_result(it: Event, answered: bool, counter: TokenCounter) -> tuple[Message, int, int, dict[str, Any] | None]:
    """(message, tokens, value rank, spill meta) of a tool result; `answered`: its call is right before it."""
    d = it.data
    call_id = str(d.get("call_id", ""))
    name = str(d.get("name", ""))
    content = str(d.get("content", ""))
    is_error = bool(d.get("is_error", False))
    if answered:
        msg = Message(role="tool", content=content, tool_call_id=call_id, name=name, is_error=is_error, event_id=it.id)
    else:  # its call is not in view: keep the facts, as a user-side note
        msg = Message(role="user", content=f"[output of an earlier {name or 'tool'} call {call_id}]\n{content}", event_id=it.id)
    return msg, count_message(msg, counter), value_rank(content, name, is_error), _spill_meta(it)


def _render_assistant(it: Event, counter: TokenCounter) -> tuple[Message, int] | None:
    d = it.data
    calls = [ToolCall(str(c.get("id", "")), str(c.get("name", "")), dict(c.get("arguments") or {}))
             for c in d.get("tool_calls") or []]
    text = str(d.get("text", "") or "")
    if not text and not calls:
        return None  # an empty reply (e.g. cancelled before any output) carries nothing and some APIs reject it
    msg = Message(role="assistant", content=text, tool_calls=calls, event_id=it.id)
    return msg, count_message(msg, counter)


def _render_user(it: Event, counter: TokenCounter) -> tuple[Message, int]:
    msg = Message(role="user", content=str(it.data.get("text", "")), event_id=it.id)
    return msg, count_message(msg, counter)


def _render_missing(call_id: str, name: str, counter: TokenCounter) -> tuple[Message, int]:
    msg = Message(role="tool", content=MISSING_RESULT, tool_call_id=call_id, name=name, is_error=True)
    return msg, count_message(msg, counter)


def render(items: list[ViewItem], counter: TokenCounter, cache: BuildCache | None = None) -> list[Slot]:
    """The view's messages as slots. With a cache: resumes from the longest rendered prefix of `items`
    and renders each remaining event through the per-event memo (the result is the same either way)."""
    cache = (cache or BuildCache()).bind(counter)
    memo = cache.memo
    start = cache.render_prefix(items)
    slots: list[Slot] = list(start.slots) if start else []
    pending: list[tuple[str, str]] = list(start.pending) if start else []  # calls awaiting a result right after their assistant message
    turn = start.turn if start else 0

    def flush() -> None:
        for call_id, name in pending:
            msg, n = memo(("missing", call_id, name), None, lambda c=call_id, nm=name: _render_missing(c, nm, counter),  # type: ignore[misc]
                          kind="renders", chars=len(MISSING_RESULT))
            slots.append(Slot(msg, n, "tools", "synthetic", turn, -1))
        pending.clear()

    for idx in range(len(start.items) if start else 0, len(items)):
        it = items[idx]
        if isinstance(it, Summary):
            flush()
            msg, n = memo(("summary", it.event_id), it, lambda s=it: _render_summary(s, counter),  # type: ignore[misc]
                          kind="renders", chars=len(it.text))
            slots.append(Slot(msg, n, "hot", "summary", turn, idx, event_id=it.event_id))
            continue
        size = cache.size(it)
        if it.kind == "tool_result":
            call_id = str(it.data.get("call_id", ""))
            match = next((p for p in pending if p[0] == call_id), None)
            if match is not None:
                pending.remove(match)
            msg, n, rank, spill = memo(("result", it.id, match is not None), it,
                                       lambda e=it, a=match is not None: _render_result(e, a, counter),  # type: ignore[misc]
                                       kind="renders", chars=len(str(it.data.get("content", ""))))
            slots.append(Slot(msg, n, "tools", "spilled" if spill else "verbatim", turn, idx,
                              is_tool_result=True, rank=rank, source=str(it.data.get("content", "")),
                              spill=spill, event_id=it.id, full_tokens=size))
            continue
        flush()
        if it.kind == "user":
            try:
                turn = int(it.data.get("turn", turn + 1))
            except (TypeError, ValueError):
                turn += 1
            msg, n = memo(("user", it.id), it, lambda e=it: _render_user(e, counter),  # type: ignore[misc]
                          kind="renders", chars=len(str(it.data.get("text", ""))))
            slots.append(Slot(msg, n, "hot", "verbatim", turn, idx, event_id=it.id, full_tokens=size))
        elif it.kind == "assistant":
            rendered = memo(("assistant", it.id), it, lambda e=it: _render_assistant(e, counter),  # type: ignore[misc]
                            kind="renders", chars=len(str(it.data.get("text", "") or "")))
            if rendered is None:
                continue
            msg, n = rendered
            slots.append(Slot(msg, n, "hot", "verbatim", turn, idx, event_id=it.id, full_tokens=size))
            pending.extend((c.id, c.name) for c in msg.tool_calls)
    cache.keep_render(RenderState(list(items), list(slots), tuple(pending), turn))
    flush()
    return slots


def assemble(items: list[ViewItem], inputs: BuildInputs, warm: str, cache: BuildCache | None = None) -> Draft:
    counter = inputs.counter
    cache = (cache or BuildCache()).bind(counter)
    slots = render(items, counter, cache)
    system_tokens, tool_spec_tokens = cache.fixed_tokens(inputs.system, inputs.tools)
    warm_msg = Message(role="user", content=warm, kind="warm") if warm else None
    warm_tokens = count_message(warm_msg, counter) if warm_msg else 0
    return Draft(items, slots, REQUEST_OVERHEAD + system_tokens + tool_spec_tokens, system_tokens, tool_spec_tokens,
                 warm_msg, warm_tokens, _protect_from(slots, inputs.protect_turns))


def _protect_from(slots: list[Slot], protect: int) -> int:
    """Slot index where the last `protect` user turns start (all of them if fewer; none if protect ≤ 0).
    Scans from the end: the recent turns are few, the history is long."""
    if protect <= 0:
        return len(slots)
    found = 0
    first = 0
    for i in range(len(slots) - 1, -1, -1):
        s = slots[i]
        if s.msg.role == "user" and s.msg.kind == "message" and not s.is_tool_result:
            found += 1
            first = i
            if found == protect:
                return i
    return first if found else 0


def with_content(msg: Message, content: str) -> Message:
    return dataclasses.replace(msg, content=content)
