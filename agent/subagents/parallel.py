"""The `task` calls of one step run together: consecutive ones form a group that runs in a bounded
thread pool, and their results come back (and are logged) in call order. Every other call runs alone,
in order, as before — a group never overtakes the call before it nor runs past the call after it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from ctxagent.context.request import ToolCall

if TYPE_CHECKING:
    from ctxagent.tools.contract import ToolRegistry

PARALLEL_TOOLS = frozenset({"task"})
MAX_PARALLEL = 3  # sub-agents of one step running at once

R = TypeVar("R")


def call_groups(calls: Sequence[ToolCall]) -> Iterator[list[ToolCall]]:
    """The calls in order, consecutive well-formed `task` calls together, each other call alone."""
    group: list[ToolCall] = []
    for call in calls:
        if call.name in PARALLEL_TOOLS and not call.malformed:
            group.append(call)
            continue
        if group:
            yield group
            group = []
        yield [call]
    if group:
        yield group


def run_together(group: list[ToolCall], fn: Callable[[ToolCall], R], limit: int = MAX_PARALLEL) -> list[R]:
    """fn over the group, at most `limit` at once; the results in the group's order."""
    if len(group) == 1:
        return [fn(group[0])]
    with ThreadPoolExecutor(max_workers=max(1, min(limit, len(group))), thread_name_prefix="subagent") as pool:
        return list(pool.map(fn, group))


def may_change_files(call: ToolCall, registry: ToolRegistry) -> bool:
    """A `task` call whose sub-agent gets a tool that is not read-only (an edit, a command): the parent
    takes its turn's checkpoint before it runs, so rewinding the parent's turn undoes the child's edits.
    (Without `tools` the sub-agent gets the read-only default.)"""
    tools = call.arguments.get("tools") if call.name in PARALLEL_TOOLS and isinstance(call.arguments, dict) else None
    return isinstance(tools, list) and any(
        isinstance(n, str) and registry.get(n) is not None and registry.permission(n) != "read" for n in tools)
