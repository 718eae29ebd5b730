"""The `read_event` tool: read back any event of this session's log by id — a pruned tool output, a
compacted turn, a rewound message — paged or grep-able like read_spill.

Nothing the context engine cuts is lost: a pruned preview, a compaction summary and a quoted
requirement all name the event they came from, and this tool shows its original (a spilled output in
full, from the spill store).
"""

from __future__ import annotations

import json
from typing import Any

from ctxagent.context.errors import ToolError
from ctxagent.context.floor.bounded_regex import MATCH_SECONDS
from ctxagent.context.history import Event, SessionLog, hidden_by_rewinds
from ctxagent.context.spill import SpillStore, page_text
from ctxagent.tools.contract import FunctionTool, ToolArgs, ToolContext, ToolResult
from pydantic import Field


class ReadEventArgs(ToolArgs):
    id: int = Field(description="The event id named in a pruned preview, a summary or a quote (\"event 12\").")
    offset: int | None = Field(None, description="First line to show (0-based), or first match with grep. Default 0.")
    limit: int | None = Field(None, description="How many lines (or matches) to show. Default 200, max 2000.")
    grep: str | None = Field(None, description="Regular expression (or literal text) to search for instead of paging.")


DESCRIPTION = (
    "Read back an earlier event of this session by its id: a tool output that was pruned or spilled, or "
    "the turns a summary replaced. Page by line (offset, limit) or search (grep); lines are numbered."
)


def _log(ctx: ToolContext) -> SessionLog:
    if ctx.services.log is None:
        raise ToolError("read_event needs the session log, which this context does not have")
    return ctx.services.log


def event_text(ev: Event, spill: SpillStore | None) -> tuple[str, str]:
    """(what the event is, its full text) — a spilled output read whole from the spill store."""
    if ev.kind == "tool_result":
        r = ev.tool_result
        ref = r.spill_ref
        text = r.content
        if ref is not None and spill is not None:
            try:
                text = spill.get(ref.handle)
            except ToolError:
                text = r.content + "\n[the spilled original is no longer in the spill store]"
        status = "error" if r.is_error else "ok"
        return f"output of {r.name or 'a tool'} (call {r.call_id}, {status})", text
    if ev.kind == "user":
        return f"user message, turn {ev.user.turn}", ev.user.text
    if ev.kind == "assistant":
        step = ev.assistant
        calls = [f"tool call {c.name} {json.dumps(c.arguments, ensure_ascii=False, sort_keys=True)}" for c in step.tool_calls]
        return f"assistant message, step {step.step}", "\n".join([step.text, *calls]).strip()
    if ev.kind == "compaction":
        c = ev.compaction
        return f"summary of events {c.first_id}–{c.last_id} ({c.method})", c.summary
    return f"{ev.kind} event", json.dumps(ev.data, ensure_ascii=False, indent=1, sort_keys=True)


def run_read_event(args: ReadEventArgs, ctx: ToolContext) -> ToolResult:
    log = _log(ctx)
    events = log.events
    if not 0 <= args.id < len(events):
        return ToolResult(f"error: no event {args.id} in this session (ids 0–{len(events) - 1})", is_error=True)
    ev = events[args.id]
    what, text = event_text(ev, ctx.services.spill or SpillStore.for_root(ctx.root))
    rewound = " — rewound: no longer part of the conversation" if ev.id in hidden_by_rewinds(events) else ""
    page = page_text(text, f"event {ev.id}: {what}{rewound}", f"read_event id={ev.id}", args.offset or 0,
                     args.limit or 200, args.grep or None, seconds=float(ctx.config.get("regex_seconds") or MATCH_SECONDS))
    meta: dict[str, Any] = {"event": ev.id}
    return ToolResult(page, meta=meta)


def make_read_event_tool() -> FunctionTool[ReadEventArgs]:
    return FunctionTool("read_event", DESCRIPTION, ReadEventArgs, "read", run_read_event)


READ_EVENT = make_read_event_tool()
