"""Prompt-cache cost of a strategy's requests: which tokens a provider's cache would serve, write, or bill in full.

    cost_cached = uncached input + read × cached reads + write × cache writes     (in input-token units)

Each strategy's consecutive requests are split into blocks (system, tool schemas, each message —
`RequestMeter.chunks`), and a simulated cache keyed by the exact prefix decides the hits. The
parameters are per provider (`RULES`, defined once in context/prompt_cache.py, which the product's
builder reads too); what we assumed, and why:

- **anthropic** — reads 0.1 ×, writes 1.25 × with the 5-minute TTL and 2 × with the 1-hour TTL
  (`with_ttl`): a transcript whose writes were made with the 1-hour TTL (Claude Code's
  `cache_creation.ephemeral_1h_input_tokens`) is simulated with that TTL and that price for every
  strategy, and its real bill prices each call's 1-hour writes at 2 ×. Entries are written only at
  `cache_control` breakpoints, and only for prefixes of ≥ 1,024 tokens (Opus and Sonnet; 2,048 for
  Haiku). A request reads the longest earlier entry that is a prefix of it, found from each of its
  breakpoints looking back at most 20 blocks. The breakpoints are the ones the product sets:
  `Breakpoints.product` reads them off `AnthropicProvider.body()` (each marked block: the end of its
  wire message's neutral messages, or of the history when it precedes the working-memory block), so
  the measure follows the provider code. The `+last-message` variant adds one breakpoint on the final message, as Claude
  Code does (and as the reference, a Claude Code run, is simulated).
- **openai** — automatic prefix caching for prompts of ≥ 1,024 tokens, hits in 128-token steps, no
  write surcharge. Cached input is priced at 0.1 × as for the GPT-5 family (GPT-4.1: 0.25 ×, GPT-4o:
  0.5 ×); we could not check the current price list offline, so `read` is a parameter. Gemini's
  implicit caching (the mini-swe-agent source) works the same way, at 0.1 × for Gemini 3 Pro.

A cache belongs to one model: a call for another model (a Haiku call inside an Opus session) meets
its own, cold cache (`CacheSim.step(model=…)`). Entries expire `ttl_s` after their last use when the
source records call times (Claude Code); without times every entry lives for the whole run. A
compaction or prune that rewrites a message ends the reusable prefix there, which is exactly what
this column prices.

`Account` prices a strategy's calls one by one — each call's bill under its trajectory's rules,
weighted by its model's input price (prices.py) — plus the summarization calls billed beside them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxagent.agent.providers.anthropic_cache import wire_group_ends
from ctxagent.context.prompt_cache import RULES, CacheRules
from ctxagent.context.request import Request

__all__ = ["DEFAULT_RULES", "RULES", "Account", "Bill", "Breakpoints", "CacheRules", "CacheSim", "real_cost", "reported_bill",
           "transcript_ttl"]


DEFAULT_RULES = {"claude-code": "anthropic", "mini-swe-agent": "openai", "swe-agent": "openai", "openhands": "openai"}


@dataclass
class Bill:
    """Input tokens of one or more requests, by how a prompt cache treats them."""

    uncached: float = 0.0
    read: float = 0.0
    write: float = 0.0

    @property
    def total(self) -> float:
        return self.uncached + self.read + self.write

    def cost(self, rules: CacheRules) -> float:
        return self.uncached + rules.read * self.read + rules.write * self.write

    def add(self, other: Bill) -> None:
        self.uncached += other.uncached
        self.read += other.read
        self.write += other.write


def reported_bill(reported: int, cached: int | None, written: int | None) -> Bill:
    """A real call's bill from its usage: prompt tokens, of which read from and written to the cache."""
    read = min(int(cached or 0), reported)
    write = min(int(written or 0), reported - read)
    return Bill(float(reported - read - write), float(read), float(write))


def real_cost(bill: Bill, written_1h: int | None, rules: CacheRules) -> float:
    """What a real call's bill cost (input-token units of its model): writes made with the 1-hour TTL at
    its price, the other writes at the 5-minute one."""
    w1h = min(float(written_1h or 0), bill.write) if rules.write_1h is not None else 0.0
    return bill.uncached + rules.read * bill.read + rules.write * (bill.write - w1h) + (rules.write_1h or 0.0) * w1h


def transcript_ttl(writes: Sequence[tuple[int | None, int | None]]) -> str:
    """"1h" when most of a run's reported cache writes (total, of which 1-hour) used the 1-hour TTL, else "5m"."""
    total = sum(int(w or 0) for w, _ in writes)
    long = sum(int(h or 0) for _, h in writes)
    return "1h" if total and long * 2 > total else "5m"


@dataclass
class Account:
    """What one strategy pays over a run, priced call by call (input-token units of the main model):
    `tokens` every request's tokens by how the cache treats them (unweighted), `cost` under the cache's
    prices, `cost_uncached` the same calls with no cache, `extra_cost` the part of `cost` that is
    summarization calls billed beside the requests."""

    tokens: Bill = field(default_factory=Bill)
    cost: float = 0.0
    cost_uncached: float = 0.0
    extra_cost: float = 0.0

    def charge(self, bill: Bill, rules: CacheRules, weight: float = 1.0, priced: float | None = None,
               extra: bool = False) -> None:
        """One request: `bill` under `rules` (or its real price `priced`), × the model's input weight; `extra`: a
        summarization call's input (a server's iteration over the prompt), counted in `extra_cost` too."""
        self.tokens.add(bill)
        cost = weight * (bill.cost(rules) if priced is None else priced)
        self.cost += cost
        self.cost_uncached += weight * bill.total
        if extra:
            self.extra_cost += cost

    def charge_extra(self, cost: float, uncached: float | None = None) -> None:
        """A summarization call's output (or a whole uncached call), already priced (prices.Pricing)."""
        self.cost += cost
        self.cost_uncached += cost if uncached is None else uncached
        self.extra_cost += cost

    def add(self, other: Account) -> None:
        self.tokens.add(other.tokens)
        self.cost += other.cost
        self.cost_uncached += other.cost_uncached
        self.extra_cost += other.extra_cost

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Account:
        return cls(Bill(**d["tokens"]), d["cost"], d["cost_uncached"], d["extra_cost"])


class CacheSim:
    """One strategy's prompt cache over one run: feed it each request's blocks in call order."""

    def __init__(self, rules: CacheRules):
        self.rules = rules
        self._entries: dict[int, float] = {}  # prefix hash → expiry (inf without call times)

    def _alive(self, h: int, now: float | None) -> bool:
        exp = self._entries.get(h)
        return exp is not None and (now is None or exp >= now)

    def step(self, chunks: Sequence[tuple[Any, int]], breakpoints: Sequence[int] = (), now: float | None = None,
             scale: float = 1.0, model: str | None = None) -> Bill:
        """The bill of one request. `chunks`: (key, local tokens) per block; `breakpoints`: prefix lengths
        (in blocks) carrying cache_control (Anthropic); `scale`: local → provider tokens; `model`: whose
        cache it meets (each model has its own)."""
        rules = self.rules
        hashes = [hash(("model", model or ""))]
        cum = [0.0]
        for key, n in chunks:
            hashes.append(hash((hashes[-1], key)))
            cum.append(cum[-1] + n * scale)
        size = len(chunks)
        expiry = (now + rules.ttl_s) if now is not None else float("inf")
        if rules.automatic:
            hit = next((j for j in range(size, 0, -1) if self._alive(hashes[j], now)), 0)
            read = cum[hit] if cum[hit] >= rules.min_tokens else 0.0
            read = (read // rules.granularity) * rules.granularity
            if cum[size] >= rules.min_tokens:
                for j in range(1, size + 1):
                    self._entries[hashes[j]] = expiry
            return Bill(cum[size] - read, read, 0.0)
        marks = sorted({b for b in breakpoints if 0 < b <= size})
        hit = 0
        for b in marks:
            for j in range(b, max(0, b - rules.lookback) - 1, -1):
                if j > 0 and self._alive(hashes[j], now):
                    hit = max(hit, j)
                    break
        if hit:
            self._entries[hashes[hit]] = expiry  # a hit refreshes the entry's lifetime
        cacheable = [b for b in marks if cum[b] >= rules.min_tokens]
        last = max(cacheable, default=0)
        for b in cacheable:
            self._entries[hashes[b]] = expiry
        read = cum[hit]
        write = cum[last] - read if last > hit else 0.0
        return Bill(cum[size] - read - write, read, write)


class Breakpoints:
    """Where the product's Anthropic provider puts `cache_control`, as prefix lengths in `RequestMeter` blocks
    (overhead, system, each tool schema, each message)."""

    def __init__(self) -> None:
        from ctxagent.agent.providers.registry import make_provider
        from ctxagent.agent.providers.specs import Credentials

        # never sends anything (no key, an address nothing answers on): only its `body()` is used, to
        # read the markers the product sets
        self._provider: Any = make_provider("anthropic:bench", Credentials("anthropic", "http://127.0.0.1:9"))

    def product(self, request: Request) -> list[int]:
        body = self._provider.body(request)
        stable = 2 + len(request.tools)  # overhead + system + tools: Anthropic caches tools, then system
        marks: list[int] = []
        if any("cache_control" in b for b in body.get("system") or []) or any(
                "cache_control" in t for t in body.get("tools") or []):
            marks.append(stable)
        wire = body.get("messages") or []
        ends = wire_group_ends(request.messages)
        warm = next((i for i, m in enumerate(request.messages) if m.kind == "warm"), len(request.messages))
        for wi, wm in enumerate(wire):
            blocks = wm.get("content") or []
            for bi, b in enumerate(blocks):
                if not (isinstance(b, dict) and "cache_control" in b):
                    continue
                # a wire message's last block ends its neutral messages (the cut part's end, where it ended at
                # the previous cut); a block before the working-memory block ends the history there
                end = ends[wi] if bi == len(blocks) - 1 and wi < len(ends) else warm
                marks.append(stable + min(end, warm))
        return sorted(set(marks))

    def with_last_message(self, request: Request, product: Sequence[int] | None = None) -> list[int]:
        """The product's breakpoints (`product`, when the caller has them) plus one on the final message
        (Claude Code's placement)."""
        marks = self.product(request) if product is None else product
        return sorted({*marks, 2 + len(request.tools) + len(request.messages)})
