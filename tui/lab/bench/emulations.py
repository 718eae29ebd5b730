"""Replay strategies that are not the product: two trivial baselines and the providers' server-side context management.

- **last2+names** — the last 2 messages of the full history plus one message listing every file name
  seen so far. No summary, no memory. It is here because it meets the file-name `retention` measure
  at ~1.4k tokens a call: a table that shows it beside the engine shows what that measure is worth.
- **grep** — every user message, the last 2 messages, and one message holding what the product's own
  detectors find when run over the raw history (`GrepTracker`: constraints and decisions of user
  turns, decisions of the agent's text, requirement lines of documents read, failing tests of any
  output), with no engine and no budget. A measure it meets is one the product's detectors define.
- **anthropic-clear**, **anthropic-compact** — the product's strategies of the same names (the Anthropic
  API's own context management, `ctxagent.context.server_edits`): the same defaults, the same clearing
  rule (`plan_clear`), the same compaction range (`history.view_span`: everything the request showed).
  anthropic-clear is stateless, per request: past `trigger` tokens every tool result but those of the
  last `keep` tool uses is replaced by `CLEARED` (no clear_at_least, no exclude_tools, inputs kept);
  the client still sends everything, the server bills and shows the edited prompt, so the cache prefix
  ends at the first newly cleared result. anthropic-compact: past `trigger`, the server first
  summarizes the whole prompt (one extra iteration over it, billed) and answers from the summary, which
  then stands in, as an assistant compaction block, for everything before it.
- **openai-compact** — OpenAI's Responses API compaction (`context_management: [{type: "compaction",
  compact_threshold}]`, or `/responses/compact`): the compacted window keeps the user messages and
  replaces everything else with one opaque (encrypted) compaction item. Bench only: the product's
  OpenAI provider speaks Chat Completions, which has no compaction.

The summaries themselves are model-written on the real services; offline we stand in the product's
extractive summary (context/compact.py), so their *retention* is the extractive summary's and only
their token and cost accounting emulates the service.

Parameters (`ServerParams`, defaults from context/server_edits.py): Anthropic documents `trigger` =
100,000 input tokens and `keep` = 3 tool uses for clear_tool_uses_20250919, and 150,000 input tokens
for compact_20260112. OpenAI documents `compact_threshold` without a default: we use 0.75 W, the
product's compress threshold. A default trigger above 0.75 W is scaled down to 0.75 W
(`scaled_trigger`), as in the product. The placeholder of a cleared result is not documented (`CLEARED`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxagent.context.compact import compaction_record
from ctxagent.context.history import Event, view, view_span
from ctxagent.context.request import Message, Request
from ctxagent.context.server_edits import (
    BENCH_ONLY,
    CLEAR_KEEP,
    CLEAR_TRIGGER,
    CLEARED,
    COMPACT_TRIGGER,
    SERVER_STRATEGIES,
    TRIGGER_SHARE,
    ClearToolUses,
    Compact,
    ToolUse,
    plan_clear,
    scaled_trigger,
)
from ctxagent.tui.lab.bench.presence import NAMES_KIND

__all__ = ["CLEARED", "EMULATED", "GREP_KIND", "GrepTracker", "ServerParams", "clear_tool_uses", "grep_baseline",
           "last2_names", "server_compaction"]

GREP_KIND = "grep"  # Message.kind of the grep baseline's message of detected lines
GREP_HEAD = "Found by rule in the session so far (constraints, decisions, requirements, failing tests):"

EMULATED = (*SERVER_STRATEGIES, *BENCH_ONLY)


@dataclass(frozen=True)
class ServerParams:
    clear_trigger: int = CLEAR_TRIGGER
    clear_keep: int = CLEAR_KEEP
    compact_trigger: int = COMPACT_TRIGGER
    openai_trigger_share: float = TRIGGER_SHARE

    def clear_edit(self, window: int) -> ClearToolUses:
        """With the defaults: the product's edit at W (server_edits_for("anthropic-clear", W))."""
        return ClearToolUses(trigger=scaled_trigger(self.clear_trigger, window), keep=self.clear_keep)

    def compact_edit(self, window: int) -> Compact:
        return Compact(trigger=scaled_trigger(self.compact_trigger, window))

    def triggers(self, window: int) -> dict[str, int]:
        return {"anthropic-clear": self.clear_edit(window).trigger, "anthropic-compact": self.compact_edit(window).trigger,
                "openai-compact": int(self.openai_trigger_share * window)}

    def describe(self, window: int) -> dict[str, Any]:
        t = self.triggers(window)
        return {"anthropic-clear": {"trigger": t["anthropic-clear"], "keep": self.clear_keep, "clear_at_least": None,
                                    "clear_tool_inputs": False, "placeholder": CLEARED},
                "anthropic-compact": {"trigger": t["anthropic-compact"], "keeps": "nothing verbatim: the summary stands in "
                                      "for everything the request showed"},
                "openai-compact": {"trigger": t["openai-compact"], "keeps": "every user message verbatim, the rest summarized"}}


def last2_names(full: Request, names: Sequence[str]) -> Request:
    """The trivial baseline: the last 2 messages of the full request, after a list of every file name seen."""
    listing = Message("user", "Files seen so far: " + ", ".join(names), kind=NAMES_KIND) if names else None
    messages = ([listing] if listing else []) + list(full.messages[-2:])
    return Request(system=full.system, messages=messages, tools=list(full.tools), max_tokens=full.max_tokens)


class GrepTracker:
    """The product's detectors run over the raw history as it grows: every line they find, once, in order."""

    def __init__(self) -> None:
        self.lines: dict[str, None] = {}
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}

    def add(self, kind: str, data: dict[str, Any]) -> None:
        from ctxagent.context.language.detect import (
            detect_constraints,
            detect_decisions,
            detect_requirements,
            failing_tests,
        )
        from ctxagent.context.tool_meta import reads_document

        found: list[str] = []
        if kind == "user":
            text = str(data.get("text") or "")
            found += detect_constraints(text) + detect_decisions(text)
        elif kind == "assistant":
            found += detect_decisions(str(data.get("text") or ""))
            for c in data.get("tool_calls") or []:
                args = c.get("arguments")
                self._calls[str(c.get("id"))] = (str(c.get("name") or ""), args if isinstance(args, dict) else {})
        elif kind == "tool_result":
            content = str(data.get("content") or "")
            call = self._calls.get(str(data.get("call_id")))
            if call is not None and reads_document(*call):
                found += detect_requirements(content)
            found += failing_tests(content)
        for line in found:
            self.lines.setdefault(line.strip(), None)


def grep_baseline(full: Request, lines: Sequence[str]) -> Request:
    """The grep baseline: every user message of the full request, then the detected lines, then its last 2 messages."""
    last = list(full.messages[-2:])
    head = len(full.messages) - len(last)
    users = [m for m in full.messages[:head] if m.role == "user" and m.kind == "message"]
    found = [Message("user", "\n".join([GREP_HEAD, *(f"- {ln}" for ln in lines)]), kind=GREP_KIND)] if lines else []
    return Request(system=full.system, messages=[*users, *found, *last], tools=list(full.tools), max_tokens=full.max_tokens)


def clear_tool_uses(full: Request, edit: ClearToolUses, prompt_tokens: float,
                    size: Callable[[str], float] = lambda text: len(text) / 4) -> tuple[Request, frozenset[str]]:
    """clear_tool_uses_20250919 on a request of `prompt_tokens`, by the product's rule (`plan_clear`):
    (the request the model sees, the ids of the tool uses cleared). `size`: tokens of a text, in the
    unit of `prompt_tokens`. Below the trigger the request is returned as it is."""
    results = {m.tool_call_id: m for m in full.messages if m.role == "tool"}
    uses = [ToolUse(c.id, c.name, int(max(0.0, size(results[c.id].content) - size(CLEARED))) if c.id in results else 0,
                    int(size(json.dumps(c.arguments, ensure_ascii=False))))
            for m in full.messages if m.role == "assistant" for c in m.tool_calls]
    plan = plan_clear(uses, int(prompt_tokens), edit)
    if plan is None:
        return full, frozenset()
    messages = []
    for m in full.messages:
        if m.role == "tool" and m.tool_call_id in plan.ids:
            m = dataclasses.replace(m, content=CLEARED)
        elif m.role == "assistant" and edit.clear_tool_inputs and any(c.id in plan.ids for c in m.tool_calls):
            m = dataclasses.replace(m, tool_calls=[dataclasses.replace(c, arguments={}) if c.id in plan.ids else c
                                                   for c in m.tool_calls])
        messages.append(m)
    return Request(system=full.system, messages=messages, tools=list(full.tools), max_tokens=full.max_tokens), plan.ids


def server_compaction(events: list[Event], keep_users: bool) -> dict[str, Any] | None:
    """The compaction event a server-side compaction leaves: everything the request showed
    (`history.view_span`, as the product logs it), summarized extractively in place of the model.
    Anthropic's is kept as the product keeps it (its block, an assistant message); `keep_users`
    (OpenAI) carries every user message verbatim into the compacted window. None for an empty view."""
    items = view(events)
    span = view_span(items)
    record = compaction_record(items, None, None) if span is not None else None
    if record is None or span is None:
        return None
    summary = record.summary
    update: dict[str, Any] = {"first_id": span[0], "last_id": span[1], "method": "server"}
    if keep_users:
        users = [e.user.text for e in events if e.kind == "user" and e.id <= span[1]]
        summary = "User messages (kept verbatim):\n" + "\n\n".join(users) + "\n\n" + summary
    else:
        update["server_block"] = {"type": "compaction", "content": summary}
    return record.model_copy(update={**update, "summary": summary}).to_data()

