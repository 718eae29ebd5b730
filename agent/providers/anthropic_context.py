"""The Anthropic API's own context management, on the wire (strategies anthropic-clear / anthropic-compact).

Request side: `Request.server_edits` (context/server_edits.py) becomes the body's `context_management`
and the call goes to `client.beta.messages.create` with the edits' beta headers
(`context-management-2025-06-27`, `compact-2026-01-12`). A `server_compaction` message goes back as
the `compaction` block the server returned, unchanged.

Response side: `context_management.applied_edits` (on the message, or on the stream's message_delta)
and the compaction iteration of `usage.iterations` become one ServerEdits event; a `compaction`
content block (streamed as content_block_start + compaction_delta*) becomes a ServerCompaction.
A compaction block with no content is the server's failed compaction, a no-op: it is dropped.
"""

from __future__ import annotations

from typing import Any

from ctxagent.agent.providers.protocol import ServerCompaction, ServerEdits
from ctxagent.context.events import AppliedEditData
from ctxagent.context.request import Message, Request, Usage
from ctxagent.context.server_edits import beta_headers


def add_context_management(body: dict[str, Any], request: Request) -> None:
    if request.server_edits:
        body["context_management"] = {"edits": [e.to_wire() for e in request.server_edits]}


def betas_for(body: dict[str, Any]) -> list[str]:
    return beta_headers((body.get("context_management") or {}).get("edits") or [])


def compaction_wire_block(m: Message) -> dict[str, Any] | None:
    """The block a `server_compaction` message stands for, as the server returned it."""
    if m.kind == "server_compaction" and m.block is not None:
        return dict(m.block)
    return None


class CompactionAssembler:
    """Collects a streamed compaction block: content_block_start, then compaction_delta pieces."""

    def __init__(self, block: Any):
        self.fields: dict[str, Any] = {"type": "compaction", "content": getattr(block, "content", None) or ""}
        for name in ("encrypted_content", "signature"):
            value = getattr(block, name, None)
            if value is not None:
                self.fields[name] = value
        changes = getattr(block, "tool_changes", None)
        if changes is not None:
            self.fields["tool_changes"] = [c.to_dict() if hasattr(c, "to_dict") else c for c in changes]

    def add(self, delta: Any) -> None:
        self.fields["content"] += getattr(delta, "content", None) or ""
        encrypted = getattr(delta, "encrypted_content", None)
        if encrypted is not None:
            self.fields["encrypted_content"] = encrypted

    def event(self) -> ServerCompaction | None:
        content = self.fields["content"]
        return ServerCompaction(content, dict(self.fields)) if content else None


def applied_edits(report: Any) -> tuple[AppliedEditData, ...]:
    """`context_management.applied_edits` of a message or a message_delta (none when absent)."""
    edits = getattr(report, "applied_edits", None) or []
    out = []
    for e in edits:
        out.append(AppliedEditData(
            type=str(getattr(e, "type", "")),
            cleared_tool_uses=int(getattr(e, "cleared_tool_uses", 0) or 0),
            cleared_input_tokens=int(getattr(e, "cleared_input_tokens", 0) or 0),
            cleared_thinking_turns=getattr(e, "cleared_thinking_turns", None)))
    return tuple(out)


def compaction_usage(usage: Any) -> Usage | None:
    """The compaction iterations of `usage.iterations`, summed (billed, and not in the top-level usage)."""
    rows = [it for it in (getattr(usage, "iterations", None) or []) if getattr(it, "type", None) == "compaction"]
    if not rows:
        return None
    return Usage(input_tokens=sum(int(r.input_tokens or 0) for r in rows),
                 output_tokens=sum(int(r.output_tokens or 0) for r in rows),
                 cache_read=sum(int(r.cache_read_input_tokens or 0) for r in rows),
                 cache_write=sum(int(r.cache_creation_input_tokens or 0) for r in rows))


class EditsReport:
    """What one response said about the server's context management, folded as events arrive."""

    def __init__(self) -> None:
        self.applied: tuple[AppliedEditData, ...] = ()
        self.compaction: Usage | None = None

    def take(self, report: Any = None, usage: Any = None) -> None:
        found = applied_edits(report) if report is not None else ()
        if found:
            self.applied = found
        comp = compaction_usage(usage) if usage is not None else None
        if comp is not None:
            self.compaction = comp

    def event(self) -> ServerEdits | None:
        if not self.applied and self.compaction is None:
            return None
        return ServerEdits(self.applied, self.compaction)


COUNT_KEYS = ("messages", "model", "system", "tools", "context_management")
