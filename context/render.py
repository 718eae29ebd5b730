"""Render a history view into measured request messages (the builder's working draft).

Every message is counted once with `count_message` (a CachedCounter makes that O(new content));
the draft keeps a running total so each pruning cut is re-measured in O(1).

Repairs that keep a request valid for every provider, deterministically: an assistant tool call
with no result right after it gets a synthetic error result; a tool result whose call is not in
view (e.g. masked) is shown as a user-side note instead of a dangling "tool" message.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxagent.context.history import Event, Summary, ViewItem
from ctxagent.context.prune import value_rank
from ctxagent.context.request import Message, ToolCall
from ctxagent.context.tokens import (
    REQUEST_OVERHEAD,
    TokenCounter,
    count_message,
    count_system,
    count_tool_spec,
)

if TYPE_CHECKING:
    from ctxagent.context.budget import Budget
    from ctxagent.context.builder import BuildInputs

SUMMARY_HEADER = "[Summary of earlier conversation (events {first}–{last}); the original messages are kept in the session log]"
MISSING_RESULT = "[no result recorded for this tool call: it was interrupted or cancelled]"


@dataclass
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

    def __post_init__(self) -> None:
        self._sum = sum(s.tokens for s in self.slots)

    def total(self) -> int:
        return self.fixed + self._sum + self.warm_tokens

    def replace(self, index: int, msg: Message, tokens: int, state: str) -> None:
        slot = self.slots[index]
        self._sum += tokens - slot.tokens
        slot.msg, slot.tokens, slot.state = msg, tokens, state

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


def render(items: list[ViewItem], counter: TokenCounter) -> list[Slot]:
    slots: list[Slot] = []
    pending: list[tuple[str, str]] = []  # (call id, tool name) awaiting a result right after their assistant message
    turn = 0

    def flush() -> None:
        for call_id, name in pending:
            msg = Message(role="tool", content=MISSING_RESULT, tool_call_id=call_id, name=name, is_error=True)
            n = count_message(msg, counter)
            slots.append(Slot(msg, n, "tools", "synthetic", turn, -1))
        pending.clear()

    for idx, it in enumerate(items):
        if isinstance(it, Summary):
            flush()
            msg = Message(role="user", content=SUMMARY_HEADER.format(first=it.first_id, last=it.last_id) + "\n" + it.text,
                          kind="summary", event_id=it.event_id)
            n = count_message(msg, counter)
            slots.append(Slot(msg, n, "hot", "summary", turn, idx, event_id=it.event_id))
            continue
        d = it.data
        if it.kind == "tool_result":
            call_id = str(d.get("call_id", ""))
            name = str(d.get("name", ""))
            content = str(d.get("content", ""))
            is_error = bool(d.get("is_error", False))
            spill = _spill_meta(it)
            match = next((p for p in pending if p[0] == call_id), None)
            if match is not None:
                pending.remove(match)
                msg = Message(role="tool", content=content, tool_call_id=call_id, name=name, is_error=is_error, event_id=it.id)
            else:  # its call is not in view: keep the facts, as a user-side note
                msg = Message(role="user", content=f"[output of an earlier {name or 'tool'} call {call_id}]\n{content}", event_id=it.id)
            n = count_message(msg, counter)
            slots.append(Slot(msg, n, "tools", "spilled" if spill else "verbatim", turn, idx,
                              is_tool_result=True, rank=value_rank(content, name, is_error), source=content,
                              spill=spill, event_id=it.id))
            continue
        flush()
        if it.kind == "user":
            try:
                turn = int(d.get("turn", turn + 1))
            except (TypeError, ValueError):
                turn += 1
            msg = Message(role="user", content=str(d.get("text", "")), event_id=it.id)
            n = count_message(msg, counter)
            slots.append(Slot(msg, n, "hot", "verbatim", turn, idx, event_id=it.id))
        elif it.kind == "assistant":
            calls = [ToolCall(str(c.get("id", "")), str(c.get("name", "")), dict(c.get("arguments") or {}))
                     for c in d.get("tool_calls") or []]
            text = str(d.get("text", "") or "")
            if not text and not calls:
                continue  # an empty reply (e.g. cancelled before any output) carries nothing and some APIs reject it
            msg = Message(role="assistant", content=text, tool_calls=calls, event_id=it.id)
            n = count_message(msg, counter)
            slots.append(Slot(msg, n, "hot", "verbatim", turn, idx, event_id=it.id))
            pending.extend((c.id, c.name) for c in calls)
    flush()
    return slots


def assemble(items: list[ViewItem], inputs: BuildInputs, warm: str) -> Draft:
    counter = inputs.counter
    slots = render(items, counter)
    system_tokens = count_system(inputs.system, counter)
    tool_spec_tokens = sum(count_tool_spec(t, counter) for t in inputs.tools)
    warm_msg = Message(role="user", content=warm, kind="warm") if warm else None
    warm_tokens = count_message(warm_msg, counter) if warm_msg else 0
    user_slots = [i for i, s in enumerate(slots) if s.msg.role == "user" and s.msg.kind == "message" and not s.is_tool_result]
    protect = inputs.protect_turns
    if protect <= 0:
        protect_from = len(slots)
    elif len(user_slots) >= protect:
        protect_from = user_slots[-protect]
    else:
        protect_from = user_slots[0] if user_slots else 0
    return Draft(items, slots, REQUEST_OVERHEAD + system_tokens + tool_spec_tokens, system_tokens, tool_spec_tokens,
                 warm_msg, warm_tokens, protect_from)


def with_content(msg: Message, content: str) -> Message:
    return dataclasses.replace(msg, content=content)
