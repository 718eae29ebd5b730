"""Replay strategies that are not the product: a trivial baseline and the providers' server-side context management.

- **last2+names** — the last 2 messages of the full history plus one message listing every file name
  seen so far. No summary, no memory. It is here because it meets the file-name `retention` measure
  at ~1.4k tokens a call: a table that shows it beside the engine shows what that measure is worth.
- **anthropic-clear** — Anthropic's `clear_tool_uses_20250919` context edit. Stateless, per request:
  when the input exceeds `trigger` tokens, every tool result except those of the last `keep` tool uses
  is replaced by a short placeholder (tool inputs are kept: `clear_tool_inputs` false; no
  `clear_at_least`, no `exclude_tools`). The client still sends everything; the server bills and
  shows the edited prompt, so the cache prefix ends at the first newly cleared result.
- **anthropic-compact** — Anthropic's `compact_20260112`: when the input exceeds `trigger`, the server
  first summarizes the conversation (one extra model iteration over the whole prompt, billed) and
  continues from a `compaction` block that replaces everything before it. We keep the latest model
  step (its call and results) verbatim and summarize the rest.
- **openai-compact** — OpenAI's Responses API compaction (`context_management: [{type: "compaction",
  compact_threshold}]`, or `/responses/compact`): the compacted window keeps the user messages and
  replaces assistant messages, tool calls and results with one opaque (encrypted) compaction item.

The summaries themselves are model-written on the real services; offline we stand in the product's
extractive summary (context/compact.py), so their *retention* is the extractive summary's and only
their token and cost accounting emulates the service.

Parameters (`ServerParams`): Anthropic documents `trigger` = 100,000 input tokens and `keep` = 3 tool
uses as the defaults of clear_tool_uses_20250919, and 150,000 input tokens as compact_20260112's
default trigger (the SDK's docstring). OpenAI documents `compact_threshold` without a default, so we
assume 0.75 W, the product's own compress threshold. When a default trigger is above 0.75 W (it does
not fit the window), it is scaled down to 0.75 W, as a user of that window would have to configure it.
The placeholder text of a cleared result is not documented; we use a short one (`CLEARED`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxagent.agent.bench.presence import NAMES_KIND
from ctxagent.context.compact import compaction_record
from ctxagent.context.history import Event, view
from ctxagent.context.request import Message, Request

CLEARED = "[tool result cleared by context management]"
SCALED_TRIGGER_SHARE = 0.75
EMULATED = ("anthropic-clear", "anthropic-compact", "openai-compact")


@dataclass(frozen=True)
class ServerParams:
    clear_trigger: int = 100_000
    clear_keep: int = 3
    compact_trigger: int = 150_000
    openai_trigger_share: float = SCALED_TRIGGER_SHARE

    def triggers(self, window: int) -> dict[str, int]:
        cap = int(SCALED_TRIGGER_SHARE * window)
        return {"anthropic-clear": min(self.clear_trigger, cap), "anthropic-compact": min(self.compact_trigger, cap),
                "openai-compact": int(self.openai_trigger_share * window)}

    def describe(self, window: int) -> dict[str, Any]:
        t = self.triggers(window)
        return {"anthropic-clear": {"trigger": t["anthropic-clear"], "keep": self.clear_keep, "clear_at_least": None,
                                    "clear_tool_inputs": False, "placeholder": CLEARED},
                "anthropic-compact": {"trigger": t["anthropic-compact"], "keeps": "the latest model step"},
                "openai-compact": {"trigger": t["openai-compact"], "keeps": "every user message and the latest step"}}


def last2_names(full: Request, names: Sequence[str]) -> Request:
    """The trivial baseline: the last 2 messages of the full request, after a list of every file name seen."""
    listing = Message("user", "Files seen so far: " + ", ".join(names), kind=NAMES_KIND) if names else None
    messages = ([listing] if listing else []) + list(full.messages[-2:])
    return Request(system=full.system, messages=messages, tools=list(full.tools), max_tokens=full.max_tokens)


def clear_tool_uses(full: Request, keep: int) -> Request:
    """clear_tool_uses_20250919 applied to a request over its trigger: every tool result but those of the
    last `keep` tool uses replaced by the placeholder."""
    call_ids = [c.id for m in full.messages if m.role == "assistant" for c in m.tool_calls]
    kept = set(call_ids[-keep:]) if keep > 0 else set()
    messages = [dataclasses.replace(m, content=CLEARED) if m.role == "tool" and m.tool_call_id not in kept else m
                for m in full.messages]
    return Request(system=full.system, messages=messages, tools=list(full.tools), max_tokens=full.max_tokens)


def server_compaction(events: list[Event], keep_users: bool) -> dict[str, Any] | None:
    """The compaction event a server-side compaction would leave: everything before the latest model step,
    summarized (extractively, standing in for the model); `keep_users` (OpenAI) carries every user
    message verbatim into the compacted window. None when there is nothing before the latest step."""
    items = view(events)
    steps = [i for i, it in enumerate(items) if isinstance(it, Event) and it.kind == "assistant"]
    end = steps[-1] if steps else len(items)
    record = compaction_record(items[:end], None, None)
    if record is None:
        return None
    summary = record.summary
    if keep_users:
        users = [e.user.text for e in events if e.kind == "user" and e.id <= record.last_id]
        summary = "User messages (kept verbatim):\n" + "\n\n".join(users) + "\n\n" + summary
    return record.model_copy(update={"summary": summary, "method": "server"}).to_data()

