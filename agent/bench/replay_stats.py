"""Per-strategy accumulators of the replay and their JSON shape (the definitions are in replay.py and BENCHMARKS.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxagent.agent.bench.cache_cost import Bill, CacheRules
from ctxagent.agent.bench.metrics import mean, percentile
from ctxagent.agent.bench.requirements import Line

ORIGINS = ("user", "tool", "test")


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(x, nd)


@dataclass
class LineShares:
    """Per call, the share of the lines stated so far that the request still carries."""

    all: list[float] = field(default_factory=list)
    by_origin: dict[str, list[float]] = field(default_factory=dict)
    after: list[float] = field(default_factory=list)  # calls after the source's own compaction

    def add(self, lines: Sequence[Line], present: set[int], indexes: Sequence[int], after: bool) -> None:
        if not indexes:
            return
        share = sum(1 for i in indexes if i in present) / len(indexes)
        self.all.append(share)
        if after:
            self.after.append(share)
        by: dict[str, list[int]] = {}
        for i in indexes:
            by.setdefault(lines[i].origin, []).append(i)
        for origin, idx in by.items():
            self.by_origin.setdefault(origin, []).append(sum(1 for i in idx if i in present) / len(idx))

    def value(self) -> float | None:
        return _r(mean(self.all)) if self.all else None

    def origins(self) -> dict[str, float | None]:
        return {o: _r(mean(v)) for o, v in sorted(self.by_origin.items()) if v}


@dataclass
class StrategyStats:
    tokens: list[float] = field(default_factory=list)  # per call: the request the model sees, provider tokens
    extra_tokens: float = 0.0  # billed beside it: a server compaction's summarization iteration
    extra_calls: int = 0
    reuse: list[float] = field(default_factory=list)
    build_ms: list[float] = field(default_factory=list)
    overflows: int = 0
    facts: int = 0
    retained: int = 0
    retained_bare: int = 0  # the same, stub name lists and the names baseline's list excluded
    spills: int = 0
    prunes: int = 0
    compactions: int = 0
    facts_after: int = 0  # facts at calls after the source's first compaction (Claude Code)
    retained_after: int = 0
    facts_early: int = 0  # of those, facts last mentioned at or before that compaction
    retained_early: int = 0
    requirements: LineShares = field(default_factory=LineShares)
    decisions: LineShares = field(default_factory=LineShares)
    bill: Bill = field(default_factory=Bill)  # with the product's cache breakpoints (Anthropic rules)
    bill_last: Bill = field(default_factory=Bill)  # ... plus one on the final message
    billed_real: bool = False  # the bill is the source's own usage report (the reference)

    def to_dict(self, rules: CacheRules) -> dict[str, Any]:
        summed = sum(self.tokens) + self.extra_tokens
        return {
            "tokens_sum": int(round(summed)),
            "tokens_mean": round(mean(self.tokens), 1),
            "tokens_p95": round(percentile(self.tokens, 95), 1),
            "prefix_reuse": round(mean(self.reuse), 4) if self.reuse else None,
            "overflows": self.overflows,
            "retention": round(self.retained / self.facts, 4) if self.facts else None,
            "retention_without_lists": round(self.retained_bare / self.facts, 4) if self.facts else None,
            "requirement_retention": self.requirements.value(),
            "requirement_retention_by_origin": self.requirements.origins(),
            "decision_retention": self.decisions.value(),
            "cost_uncached": int(round(self.bill.total)),
            "cost_cached": int(round(self.bill.cost(rules))),
            "cost_cached_last_message": (int(round(self.bill_last.cost(rules)))
                                         if not rules.automatic and not self.billed_real else None),
            "cache_read_share": round(self.bill.read / self.bill.total, 4) if self.bill.total else None,
            "build_ms_p50": round(percentile(self.build_ms, 50), 3) if self.build_ms else None,
            "build_ms_p95": round(percentile(self.build_ms, 95), 3) if self.build_ms else None,
            "spills": self.spills,
            "prunes": self.prunes,
            "compactions": self.compactions,
            "extra_calls": self.extra_calls,
        }
