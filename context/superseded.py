"""Tool results that a later step made stale — the "superseded alternatives" that go first in prune.

A result is superseded when the same question was asked again later and answered (the same
read_file range, the same grep, the same test run or shell command, git status), or when it shows
a file that a later call changed (context/tool_meta.py decides): the model would be reading a stale copy.
Pure, one backwards pass over the visible items; the newest answer is never superseded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ctxagent.context.history import Event, Summary
from ctxagent.context.request import ToolCall
from ctxagent.context.tool_meta import changed_files_of, is_edit_tool


def _path(args: dict[str, Any]) -> str:
    return str(args.get("path") or "").strip().lstrip("./") or "."


def call_key(name: str, args: dict[str, Any]) -> tuple[Any, ...] | None:
    """What question a call asks; two calls with the same key ask the same thing."""
    if name == "read_file":
        return ("read_file", _path(args), args.get("start_line"), args.get("end_line"))
    if is_edit_tool(name):
        return None  # edits are actions, not questions
    try:
        canonical = json.dumps(args, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return None
    return (name, canonical)


def superseded_results(items: Sequence[Event | Summary]) -> set[int]:
    """Event ids of tool results whose answer a later step replaced."""
    calls: dict[str, ToolCall] = {}
    for it in items:
        if isinstance(it, Event) and it.kind == "assistant":
            calls.update((c.id, c) for c in it.assistant.tool_calls)
    seen: set[tuple[Any, ...]] = set()
    edited_later: set[str] = set()
    out: set[int] = set()
    for it in reversed(items):
        if not (isinstance(it, Event) and it.kind == "tool_result"):
            continue
        result = it.tool_result
        call = calls.get(result.call_id)
        name, args = (call.name, call.arguments) if call is not None else (result.name, {})
        changed = changed_files_of(call, result)
        if changed or is_edit_tool(name):
            edited_later.update(_path({"path": f}) for f in changed)
            continue
        key = call_key(name, args)
        if key is None:
            continue
        if key in seen or (name == "read_file" and _path(args) in edited_later):
            out.add(it.id)
        elif not result.is_error:
            seen.add(key)  # only a real answer replaces an older one
    return out
