"""Where the Anthropic provider puts `cache_control` (at most four breakpoints, the API's limit): the
system block (the stable prefix, set in anthropic.py: the API caches the tool schemas, then the system,
so one breakpoint covers both; the last tool schema takes it when there is no system prompt), the end
of the part the engine has already cut, where that part ended at the engine's previous cut
(`Request.anchor_messages`), and the end of the history before the per-step working-memory block.

Why the previous cut's end: a cut moves the cut part's end by a chunk of steps, often more than the 20
blocks a breakpoint looks back for an earlier entry. Without a breakpoint near the old end, the request
after the cut finds only the system's entry and re-writes the whole history (measured on the Claude Code
replay: 9 % of ctxagent's cache writes); with it, the cut re-writes only what follows the old end.

Neutral messages map onto wire messages as `wire_messages` merges them; `wire_group_ends` gives that
mapping, which the bench's cache simulation reads too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxagent.context.request import Message

EPHEMERAL = {"type": "ephemeral"}


def cache_marker(ttl: str = "5m") -> dict[str, str]:
    """The `cache_control` of a breakpoint: Anthropic's default 5-minute entry, or with `"ttl": "1h"` the
    1-hour one (config `cache_ttl`; its writes cost 2 × the input price, context/prompt_cache.py)."""
    return {**EPHEMERAL, "ttl": "1h"} if ttl == "1h" else dict(EPHEMERAL)


def mark_history_end(wire: list[dict[str, Any]], messages: list[Message], ttl: str = "5m") -> None:
    """Put a cache breakpoint on the last block of the history — before the per-step working-memory
    block, which changes every step and would otherwise end every cached prefix. The next request
    extends this history, so it reads it from the cache and pays only for what is new."""
    warm = next((m.content for m in messages if m.kind == "warm" and m.content.strip()), None)
    target: tuple[int, int] | None = None
    for wi, wm in enumerate(wire):
        for bi, block in enumerate(wm["content"]):
            if warm is not None and block.get("type") == "text" and block.get("text") == warm:
                if bi > 0:
                    target = (wi, bi - 1)
                elif wi > 0:
                    target = (wi - 1, len(wire[wi - 1]["content"]) - 1)
                else:
                    target = None
                break
            target = (wi, bi)
        else:
            continue
        break
    if target is not None:
        wire[target[0]]["content"][target[1]]["cache_control"] = cache_marker(ttl)


def wire_group_ends(messages: Sequence[Message]) -> list[int]:
    """For each Anthropic wire message (`wire_messages`: consecutive user-side messages merge, empty
    assistant turns drop), the index just past the last neutral message in it."""
    ends: list[int] = []
    roles: list[str] = []
    for i, m in enumerate(messages):
        side = "user" if m.role in ("user", "tool") else "assistant"
        if side == "assistant" and not (m.content.strip() or m.tool_calls):
            continue
        if roles and roles[-1] == side:
            ends[-1] = i + 1
        else:
            roles.append(side)
            ends.append(i + 1)
    return ends


def stable_end_group(ends: list[int], stable_messages: int) -> int | None:
    """The wire message holding the last of the request's `stable_messages` (None when there are none)."""
    if stable_messages <= 0:
        return None
    return next((wi for wi, end in enumerate(ends) if end >= stable_messages), None)


def mark_stable_end(wire: list[dict[str, Any]], messages: list[Message], stable_messages: int, ttl: str = "5m") -> None:
    """A breakpoint at the end of the wire message holding the last of the first `stable_messages`
    messages: the end of the part the engine has already cut (its next cut starts after it, so the
    request after a cut reads everything up to here from the cache instead of writing the whole history
    again), or where that part ended at the previous cut (`Request.anchor_messages`). None when that wire
    message holds the working-memory block too: its end changes every step, and the history's end
    (mark_history_end, just before that block) already marks there."""
    ends = wire_group_ends(messages)
    wi = stable_end_group(ends, stable_messages)
    warm = next((i for i, m in enumerate(messages) if m.kind == "warm"), len(messages))
    if wi is not None and ends[wi] > warm:
        return
    if wi is not None and wi < len(wire) and wire[wi]["content"]:
        wire[wi]["content"][-1]["cache_control"] = cache_marker(ttl)
