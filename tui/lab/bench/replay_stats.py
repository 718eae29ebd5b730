"""Per-strategy accumulators of the replay, their JSON shape, and how per-trajectory parts are saved and merged.

A trajectory's replay yields one `StrategyStats` per strategy (and the reference's); `to_state` /
`from_state` carry them through a worker process or a `--out` partial file, and `merge` adds them up
in trajectory order, so a run split over processes or resumed gives the same totals as one in a row.
The definitions are in replay.py and BENCHMARKS.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxagent.tui.lab.bench.cache_cost import Account
from ctxagent.tui.lab.bench.metrics import mean, percentile
from ctxagent.tui.lab.bench.requirements import Line
from ctxagent.tui.lab.bench.used_later import UsedLater

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

    def merge(self, other: LineShares) -> None:
        self.all += other.all
        self.after += other.after
        for origin, values in other.by_origin.items():
            self.by_origin.setdefault(origin, []).extend(values)


@dataclass
class StrategyStats:
    tokens: list[float] = field(default_factory=list)  # per call: the request the model sees, provider tokens
    extra_tokens: float = 0.0  # billed beside it: summarization calls' input (server iterations, ctxagent's summaries)
    extra_calls: int = 0
    summary_output: float = 0.0  # tokens the summarization calls wrote
    reuse: list[float] = field(default_factory=list)
    build_ms: list[float] = field(default_factory=list)
    overflows: int = 0
    failed_builds: int = 0  # of the overflows: builds that raised (counted at the un-relieved size)
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
    used: UsedLater = field(default_factory=UsedLater)
    account: Account = field(default_factory=Account)  # with the product's cache breakpoints (Anthropic rules)
    account_last: Account = field(default_factory=Account)  # ... plus one on the final message
    account_real: Account | None = None  # the reference: its real bill from the usage it reported

    # -- saving and adding up ------------------------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> StrategyStats:
        d = dict(state)
        d["requirements"] = LineShares(**d["requirements"])
        d["decisions"] = LineShares(**d["decisions"])
        d["used"] = UsedLater(**d["used"])
        d["account"] = Account.from_dict(d["account"])
        d["account_last"] = Account.from_dict(d["account_last"])
        d["account_real"] = Account.from_dict(d["account_real"]) if d.get("account_real") else None
        return cls(**d)

    def merge(self, other: StrategyStats) -> None:
        for f in dataclasses.fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, list):
                mine.extend(theirs)
            elif isinstance(mine, int | float) and not isinstance(mine, bool):
                setattr(self, f.name, mine + theirs)
            elif f.name == "account_real":
                if theirs is not None:
                    if mine is None:
                        self.account_real = Account()
                    assert self.account_real is not None
                    self.account_real.add(theirs)
            elif isinstance(mine, Account):
                mine.add(theirs)
            else:  # LineShares, UsedLater
                mine.merge(theirs)

    # -- the JSON shape ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        summed = sum(self.tokens) + self.extra_tokens
        bill = self.account.tokens
        out: dict[str, Any] = {
            "tokens_sum": int(round(summed)),
            "tokens_mean": round(mean(self.tokens), 1),
            "tokens_p95": round(percentile(self.tokens, 95), 1),
            "prefix_reuse": round(mean(self.reuse), 4) if self.reuse else None,
            "overflows": self.overflows,
            "failed_builds": self.failed_builds,
            "used_later": self.used.to_dict(),
            "retention": round(self.retained / self.facts, 4) if self.facts else None,
            "retention_without_lists": round(self.retained_bare / self.facts, 4) if self.facts else None,
            "requirement_retention": self.requirements.value(),
            "requirement_retention_by_origin": self.requirements.origins(),
            "decision_retention": self.decisions.value(),
            "cost_uncached": int(round(self.account.cost_uncached)),
            "cost_cached": int(round(self.account.cost)),
            "cost_cached_last_message": (int(round(self.account_last.cost)) if self.account_last.tokens.total else None),
            "cost_real": int(round(self.account_real.cost)) if self.account_real is not None else None,
            "summarization_cost": int(round(self.account.extra_cost)),
            "summarization_tokens": {"calls": self.extra_calls, "input": int(round(self.extra_tokens)),
                                     "output": int(round(self.summary_output))},
            "cache_read_share": round(bill.read / bill.total, 4) if bill.total else None,
            "cache_written": int(round(bill.write)),
            "build_ms_p50": round(percentile(self.build_ms, 50), 3) if self.build_ms else None,
            "build_ms_p95": round(percentile(self.build_ms, 95), 3) if self.build_ms else None,
            "spills": self.spills,
            "prunes": self.prunes,
            "compactions": self.compactions,
            "extra_calls": self.extra_calls,
        }
        return out
