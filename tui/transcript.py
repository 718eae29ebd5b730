"""Rebuild the chat from a session log (for --resume, /rewind, /clear) and add up its usage."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ctxagent.context import Event, Summary, Usage, view
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


def model_calls(events: Iterable[Event]) -> list[Event]:
    """The log's model calls (masked or not: they were paid for); the user's own @file / !command
    calls (`direct`) called no model."""
    return [e for e in events if e.kind == "assistant" and not e.assistant.direct]


def usage_totals(events: Iterable[Event]) -> Usage:
    """Provider-reported usage summed over every model call in the log."""
    return sum((e.assistant.usage for e in model_calls(events)), Usage())


def cost_usd(model_label: str, usage: Usage) -> float | None:
    """Dollars for `usage` at the registry's prices; None when the model's prices are unknown."""
    from ctxagent.agent import cost_usd as priced, model_info, parse_model_name

    try:
        provider, model = parse_model_name(model_label)
        info = model_info(provider, model)
    except Exception:  # an unparseable or unknown name: no price, and no guess
        return None
    if not info.known:
        return None
    return float(priced(info, usage))


def cost_markdown(model_label: str, events: Iterable[Event]) -> str:
    evs = list(events)
    t = usage_totals(evs)
    cost = cost_usd(model_label, t)
    calls = len(model_calls(evs))
    cost_s = f"${cost:.4f}" if cost is not None else "unknown (no prices for this model)"
    return (
        f"## Cost of this session\n\n| | tokens |\n| --- | ---: |\n"
        f"| input | {t.input_tokens:,} |\n| output | {t.output_tokens:,} |\n"
        f"| cache read | {t.cache_read:,} |\n| cache write | {t.cache_write:,} |\n\n"
        f"{calls} model calls with **{model_label}** · cost: **{cost_s}**"
    )
