"""Tool results that a later step made stale — the "superseded alternatives" that go first in prune.

A result is superseded when the same question was asked again later and answered (the same
read_file range, the same grep, the same test run or shell command, git status), or when it shows
a file that a later edit_file / write_file changed: the model would be reading a stale copy.
Pure, one backwards pass over the visible items; the newest answer is never superseded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ctxagent.context.history import Event, Summary

EDIT_TOOLS = frozenset({"edit_file", "write_file"})


def _path(args: dict[str, Any]) -> str:
    return str(args.get("path") or "").strip().lstrip("./") or "."


def call_key(name: str, args: dict[str, Any]) -> tuple[Any, ...] | None:
    """What question a call asks; two calls with the same key ask the same thing."""
    if name == "read_file":
        return ("read_file", _path(args), args.get("start_line"), args.get("end_line"))
    if name in EDIT_TOOLS:
        return None  # edits are actions, not questions
    try:
        canonical = json.dumps(args, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return None
    return (name, canonical)


def superseded_results(items: Sequence[Event | Summary]) -> set[int]:
    """Event ids of tool results whose answer a later step replaced."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for it in items:
        if isinstance(it, Event) and it.kind == "assistant":
            for c in it.data.get("tool_calls") or []:
                args = c.get("arguments")
                calls[str(c.get("id"))] = (str(c.get("name", "")), args if isinstance(args, dict) else {})
    seen: set[tuple[Any, ...]] = set()
    edited_later: set[str] = set()
    out: set[int] = set()
    for it in reversed(items):
        if not (isinstance(it, Event) and it.kind == "tool_result"):
            continue
        name, args = calls.get(str(it.data.get("call_id")), (str(it.data.get("name", "")), {}))
        if name in EDIT_TOOLS:
            if not it.data.get("is_error"):
                edited_later.add(_path(args))
            continue
        key = call_key(name, args)
        if key is None:
            continue
        if key in seen or (name == "read_file" and _path(args) in edited_later):
            out.add(it.id)
        elif not it.data.get("is_error"):
            seen.add(key)  # only a real answer replaces an older one
    return out
