"""Measuring one request for the replay: its token chunks (memoized). What it shows: presence.py."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from ctxagent.context.request import Message, Request


class RequestMeter:
    """Token chunks of a request (system, tool specs, each message), memoized by content."""

    def __init__(self, counter: Any):
        from ctxagent.context.tokens import REQUEST_OVERHEAD, count_message, count_system, count_tool_spec

        self.counter = counter
        self._count_message = count_message
        self._count_system = count_system
        self._count_tool_spec = count_tool_spec
        self._overhead = REQUEST_OVERHEAD
        self._memo: dict[Any, int] = {}

    def _memoized(self, key: Any, compute: Callable[[], int]) -> int:
        n = self._memo.get(key)
        if n is None:
            n = compute()
            if len(self._memo) > 200_000:
                self._memo.clear()
            self._memo[key] = n
        return n

    def reset(self) -> None:
        """Forget the memo: call ids are only unique within one trajectory."""
        self._memo.clear()

    @staticmethod
    def message_key(m: Message) -> tuple[Any, ...]:
        # the arguments are part of the key: the engine may show an old call with its long arguments cut
        return (m.role, m.kind, m.content, m.tool_call_id, m.name, m.is_error,
                tuple((c.id, c.name, repr(sorted(c.arguments.items()))) for c in m.tool_calls))

    def chunks(self, request: Request) -> list[tuple[Any, int]]:
        """(key, tokens) per part, summing to `count_request(request)`."""
        out: list[tuple[Any, int]] = [(("overhead",), self._overhead), (("system", request.system),
                                        self._memoized(("system", request.system),
                                                       lambda: self._count_system(request.system, self.counter)))]
        for spec in request.tools:
            key = ("tool", spec.name, spec.description)
            out.append((key, self._memoized(key, partial(self._count_tool_spec, spec, self.counter))))
        for m in request.messages:
            key = self.message_key(m)
            out.append((key, self._memoized(key, partial(self._count_message, m, self.counter))))
        return out
