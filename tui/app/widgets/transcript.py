"""Rebuild the chat from a session log (for --resume, /rewind, /clear), and what its calls cost."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ctxagent.context import Event, Summary, Usage, view
from ctxagent.tui.app.widgets.chat import SummaryPanel, ToolPanel, UserMessage
from textual.widget import Widget

if TYPE_CHECKING:
    from ctxagent.agent import SessionCost


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
                from ctxagent.tui.app.widgets.reply import (
                    AssistantMessage,  # Markdown: only when there is a reply
                )

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


def session_cost(events: Iterable[Event], model_label: str = "") -> SessionCost:
    """The session's calls, each priced with the model that made it (agent/providers/pricing.py);
    `model_label` prices calls the log names no model for."""
    from ctxagent.agent import session_cost as priced

    return priced(events, model_label)


def cost_usd(model_label: str, usage: Usage, cache_ttl: str = "5m") -> float | None:
    """Dollars for one call's `usage` at `model_label`'s prices (cache writes at `cache_ttl`'s); None when
    they are unknown."""
    from ctxagent.agent import call_cost

    return call_cost(model_label, usage, cache_ttl)


def _dollars(cost: float | None) -> str:
    return f"${cost:.4f}" if cost is not None else "unknown (no prices for this model)"


def cost_markdown(model_label: str, events: Iterable[Event]) -> str:
    """/cost: the tokens, and the calls per model, each call priced with its own model."""
    spent = session_cost(events, model_label)
    t = spent.usage
    rows = "".join(f"| {m.model or '?'} | {m.calls} | {_dollars(m.cost)} |\n" for m in spent.by_model)
    by_model = (f"\n\n| model | calls | cost |\n| --- | ---: | ---: |\n{rows}" if rows else "")
    unpriced = f" (calls with {', '.join(spent.unpriced)} are not priced)" if spent.unpriced and spent.total is not None else ""
    return (
        f"## Cost of this session\n\n| | tokens |\n| --- | ---: |\n"
        f"| input | {t.input_tokens:,} |\n| output | {t.output_tokens:,} |\n"
        f"| cache read | {t.cache_read:,} |\n| cache write | {t.cache_write:,} |"
        f"{by_model}\n\n"
        f"{spent.calls} model calls · cost: **{_dollars(spent.total)}**{unpriced} — each call priced with the "
        f"model that made it; now on **{model_label}**"
    )
