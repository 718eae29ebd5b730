"""Measuring one request for the replay: its token chunks and message keys (memoized). What it shows: presence.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from ctxagent.context.request import Message, Request, ToolSpec

MAX_MEMO = 200_000


class RequestMeter:
    """Token chunks of a request (overhead, system, tool specs, each message), memoized by content; message keys
    memoized by message object (the builder hands back the same Message objects from one step to the next)."""

    def __init__(self, counter: Any):
        from ctxagent.context.tokens import REQUEST_OVERHEAD, count_message, count_system, count_tool_spec

        self.counter = counter
        self._count_message = count_message
        self._count_system = count_system
        self._count_tool_spec = count_tool_spec
        self._overhead = REQUEST_OVERHEAD
        self._memo: dict[Any, int] = {}
        self._keys: dict[int, tuple[Message, int]] = {}  # id(message) → (the message, its number)
        self._ids: dict[tuple[Any, ...], int] = {}  # message key → its number (never cleared within a trajectory)

    def _memoized(self, key: Any, compute: Callable[[], int]) -> int:
        n = self._memo.get(key)
        if n is None:
            n = compute()
            if len(self._memo) > MAX_MEMO:
                self._memo.clear()
            self._memo[key] = n
        return n

    def reset(self) -> None:
        """Forget the memo: call ids are only unique within one trajectory."""
        self._memo.clear()
        self._keys.clear()
        self._ids.clear()

    @staticmethod
    def message_key(m: Message) -> tuple[Any, ...]:
        # the arguments are part of the key: the engine may show an old call with its long arguments cut
        return (m.role, m.kind, m.content, m.tool_call_id, m.name, m.is_error,
                tuple((c.id, c.name, repr(sorted(c.arguments.items()))) for c in m.tool_calls))

    def key(self, m: Message) -> int:
        """A small number standing for `message_key(m)` (equal messages get the same one, within a trajectory),
        computed once per message object: the measures' memos and the cache simulation hash it cheaply."""
        hit = self._keys.get(id(m))
        if hit is not None and hit[0] is m:
            return hit[1]
        k = self._ids.setdefault(self.message_key(m), len(self._ids))
        if len(self._keys) > MAX_MEMO:
            self._keys.clear()
        self._keys[id(m)] = (m, k)
        return k

    def system_tokens(self, system: str) -> int:
        return self._memoized(("system", system), lambda: self._count_system(system, self.counter))

    def tools_tokens(self, tools: Sequence[ToolSpec]) -> int:
        return sum(self._memoized(("tool", t.name, t.description), partial(self._count_tool_spec, t, self.counter))
                   for t in tools)

    def chunks(self, request: Request) -> list[tuple[Any, int]]:
        """(key, tokens) per part, summing to `count_request(request)`."""
        out: list[tuple[Any, int]] = [(("overhead",), self._overhead),
                                      (("system", request.system), self.system_tokens(request.system))]
        for spec in request.tools:
            tool_key = ("tool", spec.name, spec.description)
            out.append((tool_key, self._memoized(tool_key, partial(self._count_tool_spec, spec, self.counter))))
        for m in request.messages:
            key = self.key(m)
            out.append((key, self._memoized(("message", key), partial(self._count_message, m, self.counter))))
        return out
