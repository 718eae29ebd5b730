"""`session/load`: a ctxagent session's history, replayed as the session/update notifications a
client would have seen — the user's messages, the replies, every tool call with its result.

What is replayed is what the conversation still holds: the turns a rewind hid are left out (the
log keeps them), compacted turns are replayed as they were said (the summary is what the model sees
next; the user saw the originals).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp.schema import ToolCallStatus
    from ctxagent.context.history import Event


def history_updates(events: list[Event], root: Path) -> list[Any]:
    """The updates that replay `events`, in order."""
    from acp.helpers import start_tool_call, update_agent_message_text, update_user_message_text
    from ctxagent.context.history import hidden_by_rewinds
    from ctxagent.tui.acp.tool_view import finished_content, locations, title, tool_kind

    hidden = hidden_by_rewinds(events)
    live = [e for e in events if e.id not in hidden]
    results = {e.tool_result.call_id: e.tool_result for e in live if e.kind == "tool_result"}
    out: list[Any] = []
    for ev in live:
        if ev.kind == "user":
            out.append(update_user_message_text(ev.user.text))
        elif ev.kind == "assistant":
            step = ev.assistant
            if step.text:
                out.append(update_agent_message_text(step.text))
            for call in step.tool_calls:
                result = results.get(call.id)
                meta: dict[str, Any] = result.meta.to_data() if result is not None else {}
                status: ToolCallStatus = "failed" if result is None or result.is_error else "completed"
                content = (finished_content(root, call.name, result.content, result.is_error, meta)
                           if result is not None else None)
                out.append(start_tool_call(
                    call.id, title(call.name, call.arguments), kind=tool_kind(call.name), status=status,
                    content=content, locations=locations(root, call.arguments, meta) or None,
                    raw_input=call.arguments,
                ))
    return out
