"""The price of a relief: what a clear or a compaction does to the prompt cache, logged with the step.

A relief changes the history part-way, so the provider's cache, which serves the longest prefix it has
seen, serves only the part before the first change; the rest is written again in its new form, and
every later call reads the new, shorter history instead of the old one. Comparing the request with
the one sent before it (`relief_price`):

    kept       the history before the first changed message (still read from the cache)
    dropped    the old history after it: cached, and now no longer read
    rewritten  that old history in its new form (a summary, stubs, the same messages after the cut),
               written to the cache again; brand-new messages are not counted (they are written anyway)

all in provider tokens (the local count × the calibration ratio). The history is what sits before the
per-step working-memory block (the last cache breakpoint; anthropic_cache.py). Over the next `calls`
calls, in input-token units of the step's model (× its input price for dollars):

    before = calls × read × (kept + dropped)                        the cache as it was
    after  = read × kept + write × rewritten + (calls − 1) × read × (kept + rewritten)

When the cache was cold at this step anyway (the provider's TTL passed, another model), both pay the
write for their whole history on the first call: the relief then costs nothing extra. The prices are the
provider's rules (context/prompt_cache.py), with the configured TTL (a 1-hour write costs 2 ×).
`payback` is the number of calls after which the relief has earned back its writes.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from ctxagent.context.prompt_cache import CacheRules
from ctxagent.context.request import Message, Request
from ctxagent.context.tokens import TokenCounter, count_message, count_system, count_tool_spec

DEFAULT_HORIZON = 10  # calls the logged before / after cost is summed over (the report uses the real count)


@dataclass(frozen=True)
class ReliefPrice:
    kind: str  # "compaction" (a summary stands in for older messages) | "clear" (tool output cut in place)
    kept: int
    dropped: int
    rewritten: int
    cold: bool  # the cache was cold at this step anyway
    read: float  # the rules' prices, × the input price
    write: float
    ttl: str  # "5m" | "1h"
    horizon: int = DEFAULT_HORIZON

    @property
    def freed(self) -> int:
        """Provider tokens each later call no longer sends."""
        return self.dropped - self.rewritten

    def costs(self, calls: int | None = None) -> tuple[float, float]:
        """(before, after) over `calls` calls (the horizon by default), in input-token units."""
        n = max(1, self.horizon if calls is None else calls)
        old, new = self.kept + self.dropped, self.kept + self.rewritten
        if self.cold:
            return self.write * old + (n - 1) * self.read * old, self.write * new + (n - 1) * self.read * new
        return n * self.read * old, self.read * self.kept + self.write * self.rewritten + (n - 1) * self.read * new

    def payback(self) -> int | None:
        """Calls after which the relief has earned back its writes (0: at once; None: never, it frees nothing)."""
        first_before, first_after = self.costs(1)
        extra = first_after - first_before
        if extra <= 0:
            return 0
        saving = self.read * self.freed
        return math.ceil(extra / saving) if saving > 0 else None

    def to_dict(self) -> dict[str, Any]:
        before, after = self.costs()
        return {**asdict(self), "cost_before": round(before, 1), "cost_after": round(after, 1), "payback": self.payback()}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> ReliefPrice:
        known = set(ReliefPrice.__dataclass_fields__)
        return ReliefPrice(**{k: v for k, v in d.items() if k in known})


def _history(request: Request) -> list[Message]:
    """The messages before the working-memory block (all of them when there is none)."""
    end = next((i for i, m in enumerate(request.messages) if m.kind == "warm"), len(request.messages))
    return request.messages[:end]


def _same(a: Message, b: Message) -> bool:
    return a is b or a == b


def relief_price(previous: Request, current: Request, counter: TokenCounter, ratio: float, rules: CacheRules,
                 cold: bool) -> ReliefPrice | None:
    """The cache effect of the relief between `previous` (the request sent before) and `current`; None
    when `current` only extends the previous history (no relief broke the cached prefix)."""
    old, new = _history(previous), _history(current)
    if previous.system != current.system or previous.tools != current.tools:
        return None  # another stable prefix: nothing of the history was reusable, relief or not
    d = 0
    for a, b in zip(old, new, strict=False):
        if not _same(a, b):
            break
        d += 1
    if d == len(old):
        return None
    seen = max((m.event_id for m in previous.messages if m.event_id is not None), default=-1)
    scale = ratio if ratio > 0 else 1.0

    def tokens(msgs: list[Message]) -> int:
        return round(sum(count_message(m, counter) for m in msgs) * scale)

    rewritten = tokens([m for m in new[d:] if m.event_id is None or m.event_id <= seen])
    kind = "compaction" if any(m.kind == "summary" for m in new[d:]) else "clear"
    base = (count_system(current.system, counter) + sum(count_tool_spec(t, counter) for t in current.tools))
    return ReliefPrice(kind=kind, kept=round(base * scale) + tokens(new[:d]), dropped=tokens(old[d:]),
                       rewritten=rewritten, cold=cold, read=rules.read, write=rules.write, ttl=rules.ttl)



def payback_words(payback: int | None) -> str:
    if payback == 0:
        return "pays for itself at once"
    if payback is None:
        return "never pays back (it frees nothing)"
    return f"pays back after {payback} call{'s' if payback != 1 else ''}"


def price_text(price: ReliefPrice, calls: int | None = None, usd_per_token: float | None = None) -> str:
    """One line in the user's words: what the relief re-wrote, what it frees, the cost before and after
    over `calls` calls (the horizon by default), in dollars when the input price is known."""
    n = max(1, price.horizon if calls is None else calls)
    before, after = price.costs(n)
    money = f" (${before * usd_per_token:.4f} → ${after * usd_per_token:.4f})" if usd_per_token else ""
    cold = "; the cache was cold anyway, so the cut cost nothing extra" if price.cold else ""
    return (f"{price.kind}: {price.rewritten:,} tokens re-written to the cache ({price.write:g}× input, TTL {price.ttl}), "
            f"{price.freed:,} fewer sent per call; next {n} call{'s' if n != 1 else ''}: {before:,.0f} → {after:,.0f} "
            f"input tokens' worth{money}; {payback_words(price.payback())}{cold}")


def relief_rows(reports: list[tuple[int, dict[str, Any] | None]]) -> list[tuple[int, ReliefPrice, int]]:
    """(step, price, calls it served) for each step whose report logged a relief price, from the steps'
    (number, relief_price) in order: the calls it served are its own and the ones after it up to the next
    relief (or the session's end)."""
    out: list[tuple[int, ReliefPrice, int]] = []
    marks = [(i, step, ReliefPrice.from_dict(p)) for i, (step, p) in enumerate(reports) if p]
    for k, (i, step, price) in enumerate(marks):
        end = marks[k + 1][0] if k + 1 < len(marks) else len(reports)
        out.append((step, price, end - i))
    return out


def relief_label(step: int, price: ReliefPrice) -> str:
    """The gauge's few characters for the newest relief: its step, what it frees per call, its payback."""
    pay = "now" if price.payback() == 0 else "never" if price.payback() is None else f"{price.payback()} calls"
    freed = price.freed
    size = f"{freed / 1000:.1f}k" if abs(freed) >= 1000 else str(freed)
    return f"⟳ {price.kind} @{step}: −{size}/call, pays {pay}"
