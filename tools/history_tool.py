"""The `read_event` tool: read back any event of this session's log by id — a pruned tool output, a
compacted turn, a rewound message — paged or grep-able like read_spill. With `session`, an event of a
linked session, read-only: a sub-agent's, or the session this one continues (a handoff or `/new`,
whose draft and summary cite that session's events as `read_event session=OLD id=N`).

Nothing the context engine cuts is lost: a pruned preview, a compaction summary and a quoted
requirement all name the event they came from, and this tool shows its original (a spilled output in
full, from the spill store; an image it carried, from the attachment store, as an image again).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ctxagent.context.errors import ToolError
from ctxagent.context.floor.bounded_regex import MATCH_SECONDS
from ctxagent.context.floor.state_paths import SUBAGENTS_FOLDER
from ctxagent.context.history import Event, SessionLog, hidden_by_rewinds
from ctxagent.context.images import IMAGE_SUFFIX, Image, load_image
from ctxagent.context.spill import SpillStore, page_text
from ctxagent.tools.contract import FunctionTool, ToolArgs, ToolContext, ToolResult
from pydantic import Field


class ReadEventArgs(ToolArgs):
    id: int = Field(description="The event id named in a pruned preview, a summary or a quote (\"event 12\").")
    offset: int | None = Field(None, description="First line to show (0-based), or first match with grep. Default 0.")
    limit: int | None = Field(None, description="How many lines (or matches) to show. Default 200, max 2000.")
    grep: str | None = Field(None, description="Regular expression (or literal text) to search for instead of paging.")
    session: str | None = Field(None, description="another session's id: a sub-agent's, or the session this one "
                                                "continues (a handoff's); default: this one")


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
        command = ev.user.template
        if command is not None and command.project:
            return (f"user message, turn {ev.user.turn}: the project's command /{command.name} ({command.file}); the user "
                    f"typed {command.typed!r}, the text is the repository's, not the user's words"), ev.user.text
        return f"user message, turn {ev.user.turn}", ev.user.text
    if ev.kind == "assistant":
        step = ev.assistant
        calls = [f"tool call {c.name} {json.dumps(c.arguments, ensure_ascii=False, sort_keys=True)}" for c in step.tool_calls]
        return f"assistant message, step {step.step}", "\n".join([step.text, *calls]).strip()
    if ev.kind == "compaction":
        c = ev.compaction
        return f"summary of events {c.first_id}–{c.last_id} ({c.method})", c.summary
    return f"{ev.kind} event", json.dumps(ev.data, ensure_ascii=False, indent=1, sort_keys=True)


# a session id as ctxagent makes them (agent/session.py new_session_id): no path can hide in one
_SESSION_ID = re.compile(r"^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$")


def _start(log: SessionLog) -> dict[str, Any]:
    start = next((e for e in log.events if e.kind == "session_start"), None)
    return start.data if start is not None else {}


def continued_session(log: SessionLog) -> str | None:
    """The session this one continues — the old session of a handoff or of `/new` (its `session_start`
    names it as `parent`) — or None. A sub-agent continues nobody: it never sees its parent's history."""
    data = _start(log)
    parent = data.get("parent")
    if data.get("parent_call") or not isinstance(parent, str) or not _SESSION_ID.match(parent):
        return None
    return parent


def linked_log(log: SessionLog, session: str) -> SessionLog:
    """Another session's log, read-only, when this session is linked to it: the session this one
    continues (a handoff or `/new`: this one's `session_start` names it), next to this log in this
    project's sessions folder, or a sub-agent of either (its `session_start` names its parent: the old
    session's task results hand out its children's handles too). Any other session, or anything that
    is not a session id, is refused."""
    if not _SESSION_ID.match(session):
        raise ToolError(f"no sub-agent session {session[:80]!r}: a session id looks like 20260102-030405-a1b2c3")
    if session == continued_session(log):
        path = log.path.parent / f"{session}.jsonl"
        if not path.is_file():
            raise ToolError(f"session {session}, which this session continues, has no log left in this project")
        return SessionLog.load(path, sanitize=log.sanitize)
    path = log.path.parent / SUBAGENTS_FOLDER / f"{session}.jsonl"
    if not path.is_file():
        raise ToolError(f"no sub-agent session {session} of this session, and this session does not continue it")
    child = SessionLog.load(path, sanitize=log.sanitize)
    parent = _start(child).get("parent")
    if parent is None or parent not in (log.session_id, continued_session(log)):
        raise ToolError(f"session {session} is not a sub-agent of this session, nor of the session it continues")
    return child


def run_read_event(args: ReadEventArgs, ctx: ToolContext) -> ToolResult:
    log = _log(ctx)
    if args.session and args.session != log.session_id:
        log = linked_log(log, args.session)
    events = log.events
    if not 0 <= args.id < len(events):
        where = f"session {log.session_id}" if log is not ctx.services.log else "this session"
        return ToolResult(f"error: no event {args.id} in {where} (ids 0–{len(events) - 1})", is_error=True)
    ev = events[args.id]
    what, text = event_text(ev, ctx.services.spill or SpillStore.for_root(ctx.root))
    rewound = " — rewound: no longer part of the conversation" if ev.id in hidden_by_rewinds(events) else ""
    handle = f"read_event id={ev.id}" if log is ctx.services.log else f"read_event session={log.session_id} id={ev.id}"
    of = "" if log is ctx.services.log else f" of session {log.session_id}"
    page = page_text(text, f"event {ev.id}{of}: {what}{rewound}", handle, args.offset or 0,
                     args.limit or 200, args.grep or None, seconds=float(ctx.config.get("regex_seconds") or MATCH_SECONDS))
    meta: dict[str, Any] = {"event": ev.id} | ({} if log is ctx.services.log else {"session": log.session_id})
    images, note = _images_back(ev, ctx)
    return ToolResult(page + note, meta=meta, images=images)


def _images_back(ev: Event, ctx: ToolContext) -> tuple[list[Image], str]:
    """The event's images from the attachment store, when the model takes images (a cleared image's stub
    names this call), and a line saying so; ([], "") for an event without images."""
    refs = (ev.tool_result.images if ev.kind == "tool_result" else ev.user.images if ev.kind == "user" else None) or []
    if not refs:
        return [], ""
    if not ctx.services.images:
        return [], f"\n[{len(refs)} image(s) not shown: this model takes no images]"
    store = ctx.services.spill or SpillStore.for_root(ctx.root)
    images: list[Image] = []
    for ref in refs:
        try:
            images.append(load_image(store.get_blob(ref.handle, IMAGE_SUFFIX), ref.name))
        except ToolError as exc:  # gone from the store, or no longer an image we send
            return images, f"\n[image {ref.handle} could not be read back: {exc}]"
    return images, f"\n[{len(images)} image(s) of this event attached below]"


def make_read_event_tool() -> FunctionTool[ReadEventArgs]:
    return FunctionTool("read_event", DESCRIPTION, ReadEventArgs, "read", run_read_event)


READ_EVENT = make_read_event_tool()
