"""The calls of one step, grouped: consecutive calls of a tool that may run in parallel (the `task` tool:
its `parallel`) form a group that runs in a bounded thread pool, and their results come back (and are
logged) in call order. Every other call runs alone, in order — a group never overtakes the call before
it nor runs past the call after it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from ctxagent.context.request import ToolCall
from ctxagent.tools.contract import ToolRegistry

R = TypeVar("R")


def call_groups(calls: Sequence[ToolCall], registry: ToolRegistry) -> Iterator[list[ToolCall]]:
    """The calls in order, consecutive well-formed calls of a parallel tool together, each other alone."""
    group: list[ToolCall] = []
    for call in calls:
        if registry.parallel(call.name) and not call.malformed:
            group.append(call)
            continue
        if group:
            yield group
            group = []
        yield [call]
    if group:
        yield group


def run_together(group: list[ToolCall], fn: Callable[[ToolCall], R], limit: int) -> list[R]:
    """fn over the group, at most `limit` at once; the results in the group's order."""
    if len(group) == 1:
        return [fn(group[0])]
    with ThreadPoolExecutor(max_workers=max(1, min(limit, len(group))), thread_name_prefix="parallel-call") as pool:
        return list(pool.map(fn, group))
