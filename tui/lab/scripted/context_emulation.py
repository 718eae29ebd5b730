"""The loopback server's emulation of the Anthropic API's own context management.

A request with `context_management` (beta endpoint) is edited as the service would, with the rules and
defaults of `ctxagent.context.server_edits` (the same code the product and `bench replay` use):

1. a `compaction` block in the messages stands for everything before it: what precedes it is dropped
   (its `signature` must be the one this server gave, so a client that altered the block is refused);
2. `clear_tool_uses_20250919`: past the trigger, the results (and, with clear_tool_inputs, the inputs)
   of every tool use but the last `keep` are replaced by `CLEARED`, unless less than clear_at_least goes;
3. `compact_20260112`: past the trigger, the conversation is summarized into a compaction block (a
   deterministic extract standing in for the model's summary) and the reply is generated from it.

Token counts are the server's usual stand-in (compact JSON length // 4) of the body before and after
the edits. The reply carries `context_management.applied_edits` and, after a compaction, a compaction
iteration in `usage.iterations`. `/v1/messages/count_tokens` answers with the edited count and, when
edits were asked for, `context_management.original_input_tokens`.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field
from typing import Any

from ctxagent.context.server_edits import (
    CLEARED,
    ClearToolUses,
    Compact,
    ToolUse,
    compaction_due,
    edits_from_wire,
    plan_clear,
)
from ctxagent.tui.lab.scripted.script import estimate_input_tokens

SUMMARY_HEAD = "Summary of the conversation so far (scripted server compaction):"


def signature_of(content: str) -> str:
    return "sig_scripted_" + hashlib.sha256(content.encode("utf-8")).hexdigest()[:24]


def _tokens(value: Any) -> int:
    return estimate_input_tokens(value) if value not in (None, "", {}, []) else 0


@dataclass
class ServerReply:
    """What the server's context management did to one request."""

    asked: bool  # the request carried context_management
    seen: dict[str, Any]  # the body as the model sees it
    original_tokens: int
    seen_tokens: int
    applied: list[dict[str, Any]] = field(default_factory=list)  # wire applied_edits
    compaction: dict[str, Any] | None = None  # the compaction block this reply opens with
    compaction_usage: dict[str, Any] | None = None

    def context_management(self) -> dict[str, Any] | None:
        return {"applied_edits": self.applied} if self.asked else None

    def record(self) -> dict[str, Any]:
        """What the server records beside the request body (tests read it)."""
        return {"seen": self.seen, "original_tokens": self.original_tokens, "seen_tokens": self.seen_tokens,
                "applied_edits": self.applied, "compacted": self.compaction is not None}


def _after_compaction(messages: list[Any]) -> list[Any]:
    """The messages from the last compaction block on (the block's message keeps only it and what follows)."""
    for i in range(len(messages) - 1, -1, -1):
        content = messages[i].get("content") if isinstance(messages[i], dict) else None
        if not isinstance(content, list):
            continue
        for j in range(len(content) - 1, -1, -1):
            block = content[j]
            if isinstance(block, dict) and block.get("type") == "compaction":
                text = block.get("content")
                if text is not None and block.get("signature") != signature_of(str(text)):
                    raise ValueError("messages: a compaction block was altered (its signature does not match); "
                                     "send it back as it was returned")
                return [{**messages[i], "content": content[j:]}, *messages[i + 1:]]
    return messages


def _tool_uses(messages: list[Any]) -> tuple[list[ToolUse], dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """Tool uses in order, with where their call and result blocks are: (message, block) indexes."""
    uses: list[ToolUse] = []
    calls: dict[str, tuple[int, int]] = {}
    results: dict[str, tuple[int, int]] = {}
    for mi, m in enumerate(messages):
        for bi, b in enumerate(m.get("content") if isinstance(m.get("content"), list) else []):
            if isinstance(b, dict) and b.get("type") == "tool_result":
                results[str(b.get("tool_use_id"))] = (mi, bi)
            elif isinstance(b, dict) and b.get("type") == "tool_use":
                calls[str(b.get("id"))] = (mi, bi)
    for cid, (mi, bi) in calls.items():
        call = messages[mi]["content"][bi]
        result = messages[results[cid][0]]["content"][results[cid][1]] if cid in results else None
        freed = max(0, _tokens(result.get("content")) - _tokens(CLEARED)) if result is not None else 0
        uses.append(ToolUse(cid, str(call.get("name", "")), freed, _tokens(call.get("input"))))
    return uses, calls, results


def _clear(body: dict[str, Any], edit: ClearToolUses) -> dict[str, Any] | None:
    uses, calls, results = _tool_uses(body["messages"])
    plan = plan_clear(uses, estimate_input_tokens(body), edit)
    if plan is None:
        return None
    for cid in plan.ids:
        if cid in results:
            mi, bi = results[cid]
            body["messages"][mi]["content"][bi]["content"] = CLEARED
        if edit.clear_tool_inputs and cid in calls:
            mi, bi = calls[cid]
            body["messages"][mi]["content"][bi]["input"] = {}
    return {"type": edit.type, "cleared_tool_uses": plan.cleared_tool_uses}


def _summary(messages: list[Any]) -> str:
    users: list[str] = []
    tools: list[str] = []
    for m in messages:
        for b in m.get("content") if isinstance(m.get("content"), list) else [{"type": "text", "text": m.get("content")}]:
            if not isinstance(b, dict):
                continue
            if m.get("role") == "user" and b.get("type") == "text" and b.get("text"):
                users.append(str(b["text"])[:200])
            elif b.get("type") == "tool_use":
                tools.append(str(b.get("name")))
            elif b.get("type") == "compaction" and b.get("content"):
                users.insert(0, "(earlier) " + str(b["content"])[:400])
    lines = [SUMMARY_HEAD, *(f"- user: {u}" for u in users)]
    if tools:
        lines.append("- tools used: " + ", ".join(dict.fromkeys(tools)))
    return "\n".join(lines)


def apply_context_management(body: dict[str, Any]) -> ServerReply:
    """Edit a Messages request as the service's context management would; ValueError on a bad config."""
    original = estimate_input_tokens(body)
    if "context_management" not in body:
        return ServerReply(False, body, original, original)
    edits = edits_from_wire(body["context_management"])
    seen = copy.deepcopy(body)
    seen["messages"] = _after_compaction(list(seen.get("messages") or []))
    reply = ServerReply(True, seen, original, original)
    for edit in edits:
        if isinstance(edit, ClearToolUses):
            before = estimate_input_tokens(seen)
            applied = _clear(seen, edit)
            if applied is not None:
                applied["cleared_input_tokens"] = before - estimate_input_tokens(seen)
                reply.applied.append(applied)
    compact = next((e for e in edits if isinstance(e, Compact)), None)
    if compact is not None and compaction_due(estimate_input_tokens(seen), compact):
        text = _summary(seen["messages"])
        block = {"type": "compaction", "content": text, "encrypted_content": None, "signature": signature_of(text)}
        reply.compaction_usage = {"type": "compaction", "input_tokens": estimate_input_tokens(seen),
                                  "output_tokens": max(1, len(text) // 4), "cache_read_input_tokens": 0,
                                  "cache_creation_input_tokens": 0}
        seen["messages"] = [{"role": "assistant", "content": [block]}]
        reply.compaction = block
    reply.seen_tokens = estimate_input_tokens(seen)
    return reply


def count_tokens_reply(body: dict[str, Any]) -> dict[str, Any]:
    """The body of a /v1/messages/count_tokens answer: clear edits applied, compaction not (it is a
    model iteration, done only when a message is created)."""
    if "context_management" not in body:
        return {"input_tokens": estimate_input_tokens(body)}
    edits = [e for e in edits_from_wire(body["context_management"]) if isinstance(e, ClearToolUses)]
    reply = apply_context_management({**body, "context_management": {"edits": [e.to_wire() for e in edits]}})
    return {"input_tokens": reply.seen_tokens, "context_management": {"original_input_tokens": reply.original_tokens}}
