"""Rebuild the chat from a session log (for --resume, /rewind, /clear) and add up its usage."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ctxagent.context import Event, Summary, view
from ctxagent.tui.chat import SummaryPanel, ToolPanel, UserMessage
from textual.widget import Widget


def transcript_widgets(events: Iterable[Event]) -> list[Widget]:
    """Widgets for what the view shows: users, assistants, tool panels, compaction summaries."""
    out: list[Widget] = []
    panels: dict[str, ToolPanel] = {}
    for item in view(list(events)):
        if isinstance(item, Summary):
            how = "model summary" if item.method == "model" else "summary extracted without a model"
            out.append(SummaryPanel(f"≡ earlier turns, as a {how} (the originals are in the log)", item.text))
            continue
        if item.kind == "user":
            out.append(UserMessage(item.user.text, item.user.turn or None))
        elif item.kind == "assistant":
            said = item.assistant
            if said.text.strip():
                from ctxagent.tui.reply import AssistantMessage  # Markdown: only when there is a reply

                out.append(AssistantMessage(said.text))
            for call in said.tool_calls:
                panel = ToolPanel(call.id, call.name, dict(call.arguments), status="pending")
                panel.collapsed = not (said.direct and call.name == "shell")  # a !command stays open, as it ran
                panels[panel.call_id] = panel
                out.append(panel)
        elif item.kind == "tool_result":
            result = item.tool_result
            shown = panels.get(result.call_id)
            if shown is None:
                shown = ToolPanel(result.call_id, result.name or "?", {})
                out.append(shown)
            meta: dict[str, Any] = result.meta.to_data()
            if result.spill_ref is not None:
                meta["spill"] = result.spill_ref.to_data()
            shown.finish(result.content, result.is_error, result.duration_ms, meta)
    return out


@dataclass(frozen=True)
class UsageTotals:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    requests: int = 0


def usage_totals(events: Iterable[Event]) -> UsageTotals:
    """Provider-reported usage over every model call in the log (masked or not: it was paid for)."""
    i = o = cr = cw = n = 0
    for e in events:
        if e.kind != "assistant" or e.assistant.direct:  # direct: the user's @file / !command, no model call
            continue
        u = e.assistant.usage
        i, o, cr, cw, n = i + u.input_tokens, o + u.output_tokens, cr + u.cache_read, cw + u.cache_write, n + 1
    return UsageTotals(i, o, cr, cw, n)


def cost_usd(model_label: str, usage: UsageTotals | dict[str, int]) -> float | None:
    """Dollars for `usage` at the registry's prices; None when the model's prices are unknown."""
    from ctxagent.agent import cost_usd as priced
    from ctxagent.agent import model_info, parse_model_name

    try:
        provider, model = parse_model_name(model_label)
        info = model_info(provider, model)
    except Exception:  # an unparseable or unknown name: no price, and no guess
        return None
    if not info.known:
        return None
    u = dict(usage) if isinstance(usage, dict) else {
        "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
        "cache_read": usage.cache_read, "cache_write": usage.cache_write}
    return float(priced(info, u))


def cost_markdown(model_label: str, events: Iterable[Event]) -> str:
    evs = list(events)
    t = usage_totals(evs)
    cost = cost_usd(model_label, t)
    cost_s = f"${cost:.4f}" if cost is not None else "unknown (no prices for this model)"
    return (
        f"## Cost of this session\n\n| | tokens |\n| --- | ---: |\n"
        f"| input | {t.input_tokens:,} |\n| output | {t.output_tokens:,} |\n"
        f"| cache read | {t.cache_read:,} |\n| cache write | {t.cache_write:,} |\n\n"
        f"{t.requests} model calls with **{model_label}** · cost: **{cost_s}**"
    )
