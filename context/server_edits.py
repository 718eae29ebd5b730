"""The providers' own server-side context management, as data and as one rule ctxagent can run itself.

Strategies "anthropic-clear" and "anthropic-compact" send the history like "full" and ask the server
to relieve it: `server_edits_for(strategy, window)` is what the builder puts in `Request.server_edits`,
the Anthropic provider turns it into `context_management` (+ the beta header), the loopback
`scripted-server` parses it back (`edits_from_wire`) and applies it, and `bench replay` accounts it —
all with the defaults and the rule below, so the emulations and the product cannot drift apart.

- `ClearToolUses` — Anthropic's `clear_tool_uses_20250919`: per request, once the prompt passes
  `trigger` input tokens, the results of every tool use but the last `keep` are replaced by a
  placeholder (`clear_tool_inputs`: the calls' inputs too; `exclude_tools`: never these tools; and
  nothing at all unless at least `clear_at_least` tokens would go). Stateless: the client keeps
  sending everything, the server clears again on every request past the trigger.
- `Compact` — Anthropic's `compact_20260112`: once the prompt passes `trigger`, the server summarizes
  the whole conversation sent, answers from the summary, and returns it as a `compaction` block that
  stands in for everything before it from then on (`history.view_span`: everything the request showed).

Defaults: Anthropic documents trigger 100,000 input tokens and keep 3 tool uses for
clear_tool_uses_20250919, and 150,000 input tokens for compact_20260112 (the SDK's docstring). A
trigger above `TRIGGER_SHARE` × W (the product's compress threshold) would not fire before the window
is full, so it is scaled down to that, as a user of that window would have to configure it. The
placeholder text of a cleared result is not documented; `CLEARED` is ours.

OpenAI's compaction exists only in the Responses API (`context_management: [{type: "compaction",
compact_threshold}]`, `/responses/compact`); ctxagent's OpenAI provider speaks Chat Completions, which
has none, so "openai-compact" is a bench-only emulation (`compact_threshold` = `TRIGGER_SHARE` × W).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

CLEAR_TRIGGER = 100_000
CLEAR_KEEP = 3
COMPACT_TRIGGER = 150_000
TRIGGER_SHARE = 0.75
CLEARED = "[tool result cleared by context management]"
CLEAR_EDIT = "clear_tool_uses_20250919"
COMPACT_EDIT = "compact_20260112"
BETA_HEADERS = {CLEAR_EDIT: "context-management-2025-06-27", COMPACT_EDIT: "compact-2026-01-12"}
SERVER_STRATEGIES = ("anthropic-clear", "anthropic-compact")  # what the product can run
BENCH_ONLY = ("openai-compact",)  # emulated in bench replay only (see the module doc)


def scaled_trigger(default: int, window: int) -> int:
    """A documented default trigger, scaled down to TRIGGER_SHARE × W when it would not fit the window."""
    return min(default, int(TRIGGER_SHARE * window))


@dataclass(frozen=True)
class ClearToolUses:
    trigger: int = CLEAR_TRIGGER  # input tokens
    keep: int = CLEAR_KEEP  # tool uses kept verbatim, the newest
    clear_at_least: int | None = None
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool = False

    type = CLEAR_EDIT

    def to_wire(self) -> dict[str, Any]:
        edit: dict[str, Any] = {"type": CLEAR_EDIT, "trigger": {"type": "input_tokens", "value": self.trigger},
                                "keep": {"type": "tool_uses", "value": self.keep}}
        if self.clear_at_least is not None:
            edit["clear_at_least"] = {"type": "input_tokens", "value": self.clear_at_least}
        if self.exclude_tools:
            edit["exclude_tools"] = list(self.exclude_tools)
        if self.clear_tool_inputs:
            edit["clear_tool_inputs"] = True
        return edit


@dataclass(frozen=True)
class Compact:
    trigger: int = COMPACT_TRIGGER  # input tokens
    instructions: str | None = None

    type = COMPACT_EDIT

    def to_wire(self) -> dict[str, Any]:
        edit: dict[str, Any] = {"type": COMPACT_EDIT, "trigger": {"type": "input_tokens", "value": self.trigger}}
        if self.instructions:
            edit["instructions"] = self.instructions
        return edit


ServerEdit = ClearToolUses | Compact


def server_edits_for(strategy: str, window: int) -> tuple[ServerEdit, ...]:
    """The edits a strategy asks the server for at window W (empty for client-side strategies)."""
    if strategy == "anthropic-clear":
        return (ClearToolUses(trigger=scaled_trigger(CLEAR_TRIGGER, window)),)
    if strategy == "anthropic-compact":
        return (Compact(trigger=scaled_trigger(COMPACT_TRIGGER, window)),)
    return ()


def beta_headers(edits: Sequence[dict[str, Any]]) -> list[str]:
    """The `anthropic-beta` values wire edits need, in a stable order."""
    return sorted({BETA_HEADERS[e["type"]] for e in edits if e.get("type") in BETA_HEADERS})


def _tokens_value(d: Any, what: str, kind: str = "input_tokens") -> int:
    if not isinstance(d, dict) or d.get("type") != kind or not isinstance(d.get("value"), int) or d["value"] < 0:
        raise ValueError(f"{what} must be {{\"type\": \"{kind}\", \"value\": N ≥ 0}}")
    return int(d["value"])


def edits_from_wire(config: Any) -> tuple[ServerEdit, ...]:
    """A `context_management` object as sent on the wire, parsed back; ValueError names what is wrong
    (the loopback server answers it with a 400, like the service)."""
    if not isinstance(config, dict) or not isinstance(config.get("edits"), list):
        raise ValueError("context_management must be an object with a list of edits")
    out: list[ServerEdit] = []
    for e in config["edits"]:
        kind = e.get("type") if isinstance(e, dict) else None
        if kind == CLEAR_EDIT:
            trigger = _tokens_value(e["trigger"], "trigger") if "trigger" in e else CLEAR_TRIGGER
            keep = _tokens_value(e["keep"], "keep", "tool_uses") if "keep" in e else CLEAR_KEEP
            least = e.get("clear_at_least")
            inputs = e.get("clear_tool_inputs", False)
            excluded = e.get("exclude_tools") or []
            if not isinstance(excluded, list) or not all(isinstance(x, str) for x in excluded):
                raise ValueError("exclude_tools must be a list of tool names")
            if isinstance(inputs, list):  # a list of tool names whose inputs are cleared: we clear all or none
                inputs = bool(inputs)
            out.append(ClearToolUses(trigger, keep, _tokens_value(least, "clear_at_least") if least is not None else None,
                                     tuple(excluded), bool(inputs)))
        elif kind == COMPACT_EDIT:
            trigger = _tokens_value(e["trigger"], "trigger") if e.get("trigger") is not None else COMPACT_TRIGGER
            out.append(Compact(trigger, e.get("instructions") if isinstance(e.get("instructions"), str) else None))
        else:
            raise ValueError(f"unknown context management edit {kind!r}")
    return tuple(out)


# -- the clearing rule ----------------------------------------------------------------------------
@dataclass(frozen=True)
class ToolUse:
    """One tool use as the clearing rule sees it, in conversation order."""

    id: str
    name: str
    result_tokens: int  # what clearing its result frees (result minus placeholder)
    input_tokens: int = 0  # what clearing its input would free


@dataclass(frozen=True)
class ClearPlan:
    ids: frozenset[str]  # tool uses whose results (and inputs, with clear_tool_inputs) are cleared
    cleared_tokens: int

    @property
    def cleared_tool_uses(self) -> int:
        return len(self.ids)


def plan_clear(uses: Sequence[ToolUse], prompt_tokens: int, edit: ClearToolUses) -> ClearPlan | None:
    """Which tool uses clear_tool_uses clears in a prompt of `prompt_tokens`; None when it does not fire
    (at or under the trigger, nothing older than the last `keep`, or less than `clear_at_least` freed).
    Without clear_at_least every older result goes, even one shorter than the placeholder."""
    if prompt_tokens <= edit.trigger:
        return None
    older = list(uses[: max(0, len(uses) - edit.keep)])
    chosen = [u for u in older if u.name not in edit.exclude_tools]
    freed = sum(max(0, u.result_tokens) + (max(0, u.input_tokens) if edit.clear_tool_inputs else 0) for u in chosen)
    if not chosen or (edit.clear_at_least is not None and freed < edit.clear_at_least):
        return None
    return ClearPlan(frozenset(u.id for u in chosen), freed)


def compaction_due(prompt_tokens: int, edit: Compact) -> bool:
    return prompt_tokens > edit.trigger
