"""What a session's model calls cost, each priced with the model that made it.

A session can change model (/model, or a resume with another --model), so the log's usage is never
priced with "the current model": each call is priced with the model of its step, which the step's
`context_report` records (the newest report before the call; a log without one falls back to its
`session_start` model). Each call is priced on its own, so a long-context rate applies to the call
whose prompt passed the threshold, not to a sum. The user's own @file / !command calls
(`AssistantData.direct`) called no model: they are not model calls, cost nothing and need no report.

The app's status line and /cost, and `ctxagent report`, read this.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ctxagent.agent.providers.registry import cost_usd, model_info, parse_model_name
from ctxagent.context.builder.relief_price import price_text, relief_rows
from ctxagent.context.history import Event
from ctxagent.context.request import Usage

__all__ = ["ModelCost", "SessionCost", "call_cost", "calls_with_ttl", "input_usd_per_token", "model_calls", "priced_calls", "relief_lines", "session_cost"]


def model_calls(events: Iterable[Event]) -> list[Event]:
    """The log's model calls (masked or not: they were paid for), without the user's direct calls."""
    return [e for e in events if e.kind == "assistant" and not e.assistant.direct]


def priced_calls(events: Iterable[Event], default_model: str = "") -> list[tuple[Event, str]]:
    """Each model call with the model that answered it (`default_model` when the log names none)."""
    return [(e, model) for e, model, _ in calls_with_ttl(events, default_model)]


def calls_with_ttl(events: Iterable[Event], default_model: str = "") -> list[tuple[Event, str, str]]:
    """`priced_calls`, each with the prompt cache's TTL option its step recorded ("5m" without one)."""
    model, ttl = default_model, "5m"
    out: list[tuple[Event, str, str]] = []
    for e in events:
        if e.kind == "session_start" and (started := str(e.data.get("model") or "")):
            model = started
        elif e.kind == "context_report":
            report = e.context_report
            model = report.model or model
            ttl = report.build.cache_ttl
        elif e.kind == "assistant" and not e.assistant.direct:
            out.append((e, model, ttl))
    return out


def call_cost(model_label: str, usage: Usage, cache_ttl: str = "5m") -> float | None:
    """Dollars for one call's `usage` at `model_label`'s prices (cache writes at `cache_ttl`'s); None when
    they are unknown (a local or scripted model, an unknown name: no price, and no guess)."""
    try:
        provider, model = parse_model_name(model_label)
        info = model_info(provider, model)
    except Exception:  # an unparseable name is a model without prices, not an error in a cost view
        return None
    return float(cost_usd(info, usage, cache_ttl)) if info.known else None


def input_usd_per_token(model_label: str) -> float | None:
    """Dollars one uncached input token costs at `model_label`'s prices (None when unknown): what turns a
    relief price (context/builder/relief_price.py, in input tokens' worth) into dollars."""
    try:
        provider, model = parse_model_name(model_label)
        info = model_info(provider, model)
    except Exception:  # an unparseable name is a model without prices
        return None
    return info.prices.input / 1_000_000 if info.known and info.prices.input > 0 else None


def relief_lines(events: Iterable[Event]) -> list[str]:
    """One line per relief of the session (a clear or a compaction a step logged the price of): its cache
    effect over the calls it served, in dollars at its step's model's prices when they are known."""
    reports = [e.context_report for e in events if e.kind == "context_report"]
    rows = relief_rows([(r.step, r.report.get("relief_price")) for r in reports])
    model_at = {r.step: r.model for r in reports}
    return [f"step {step} · {price_text(price, calls, input_usd_per_token(model_at.get(step, '')))}"
            for step, price, calls in rows]


@dataclass
class ModelCost:
    """The calls one model made in a session."""

    model: str
    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = 0.0  # None: this model's prices are unknown


@dataclass
class SessionCost:
    by_model: list[ModelCost] = field(default_factory=list)  # in the order the models first answered

    @property
    def calls(self) -> int:
        return sum(m.calls for m in self.by_model)

    @property
    def usage(self) -> Usage:
        return sum((m.usage for m in self.by_model), Usage())

    @property
    def total(self) -> float | None:
        """The priced calls' dollars; None when no call could be priced."""
        priced = [m.cost for m in self.by_model if m.cost is not None]
        return sum(priced) if priced else None

    @property
    def unpriced(self) -> list[str]:
        """Models whose calls have no known price (left out of `total`)."""
        return [m.model for m in self.by_model if m.cost is None and m.calls]


def session_cost(events: Iterable[Event], default_model: str = "") -> SessionCost:
    """The session's calls, grouped by the model that made each, each priced with its own model."""
    groups: dict[str, ModelCost] = {}
    for ev, model, ttl in calls_with_ttl(events, default_model):
        usage = ev.assistant.usage
        group = groups.setdefault(model, ModelCost(model))
        group.calls += 1
        group.usage = group.usage + usage
        cost = call_cost(model, usage, ttl)
        group.cost = None if cost is None or group.cost is None else group.cost + cost
    return SessionCost(list(groups.values()))
