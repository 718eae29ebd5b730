"""Prompt-cache cost of a strategy's requests: which tokens a provider's cache would serve, write, or bill in full.

    cost_cached = uncached input + read × cached reads + write × cache writes     (in input-token units)

Each strategy's consecutive requests are split into blocks (system, tool schemas, each message —
`RequestMeter.chunks`), and a simulated cache keyed by the exact prefix decides the hits. The
parameters are per provider (`RULES`); what we assumed, and why:

- **anthropic** — reads 0.1 ×, writes 1.25 × (5-minute TTL; the 1-hour TTL writes cost 2 ×). Entries
  are written only at `cache_control` breakpoints, and only for prefixes of ≥ 1,024 tokens (Opus and
  Sonnet; 2,048 for Haiku). A request reads the longest earlier entry that is a prefix of it, found
  from each of its breakpoints looking back at most 20 blocks. The breakpoints are the ones the
  product sets: `breakpoints()` reads them off `AnthropicProvider.body()` (today the system block and
  the last tool schema — the stable prefix only), so the measure follows the provider code. The
  `+last-message` variant adds one breakpoint on the final message, as Claude Code does.
- **openai** — automatic prefix caching for prompts of ≥ 1,024 tokens, hits in 128-token steps, no
  write surcharge. Cached input is priced at 0.1 × as for the GPT-5 family (GPT-4.1: 0.25 ×, GPT-4o:
  0.5 ×); we could not check the current price list offline, so `read` is a parameter. Gemini's
  implicit caching (the mini-swe-agent source) works the same way, at 0.1 × for Gemini 3 Pro.

Entries expire `ttl_s` after their last use when the source records call times (Claude Code); without
times every entry lives for the whole run. A compaction or prune that rewrites a message ends the
reusable prefix there, which is exactly what this column prices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxagent.agent.providers.anthropic_cache import stable_end_group, wire_group_ends
from ctxagent.context.request import Request


@dataclass(frozen=True)
class CacheRules:
    name: str
    read: float  # price of a cached input token, × the normal input price
    write: float  # price of a token written to the cache
    min_tokens: int  # shorter prefixes are never cached
    ttl_s: float  # an entry expires this long after its last use
    automatic: bool  # True: every prefix is cached (OpenAI, Gemini); False: only at breakpoints (Anthropic)
    lookback: int = 20  # blocks a breakpoint looks back for an earlier entry (Anthropic)
    granularity: int = 1  # hits are rounded down to a multiple of this many tokens (OpenAI: 128)


RULES: dict[str, CacheRules] = {
    "anthropic": CacheRules("anthropic", read=0.1, write=1.25, min_tokens=1024, ttl_s=300.0, automatic=False),
    "openai": CacheRules("openai", read=0.1, write=1.0, min_tokens=1024, ttl_s=600.0, automatic=True, lookback=0,
                         granularity=128),
}
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


class CacheSim:
    """One strategy's prompt cache over one run: feed it each request's blocks in call order."""

    def __init__(self, rules: CacheRules):
        self.rules = rules
        self._entries: dict[int, float] = {}  # prefix hash → expiry (inf without call times)

    def _alive(self, h: int, now: float | None) -> bool:
        exp = self._entries.get(h)
        return exp is not None and (now is None or exp >= now)

    def step(self, chunks: Sequence[tuple[Any, int]], breakpoints: Sequence[int] = (), now: float | None = None,
             scale: float = 1.0) -> Bill:
        """The bill of one request. `chunks`: (key, local tokens) per block; `breakpoints`: prefix lengths
        (in blocks) carrying cache_control (Anthropic); `scale`: local → provider tokens."""
        rules = self.rules
        hashes = [0]
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
        from ctxagent.agent.providers.anthropic import AnthropicProvider

        # never sends anything: only its `body()` is used, to read the markers the product sets
        self._provider = AnthropicProvider("bench", api_key="bench-no-key", base_url="http://127.0.0.1:9")

    def product(self, request: Request) -> list[int]:
        body = self._provider.body(request)
        stable = 2 + len(request.tools)  # overhead + system + tools: Anthropic caches tools, then system
        marks: list[int] = []
        if any("cache_control" in b for b in body.get("system") or []) or any(
                "cache_control" in t for t in body.get("tools") or []):
            marks.append(stable)
        wire = body.get("messages") or []
        marked = [wi for wi, wm in enumerate(wire) if any(isinstance(b, dict) and "cache_control" in b for b in wm.get("content") or [])]
        if marked:
            # the provider marks the end of the history: the block just before the working-memory block
            warm = next((i for i, m in enumerate(request.messages) if m.kind == "warm"), len(request.messages))
            marks.append(stable + warm)
        if request.stable_messages and marked:
            # ... and the end of the wire message holding the last pruned message (stable_end_group)
            ends = wire_group_ends(request.messages)
            wi = stable_end_group(ends, request.stable_messages)
            if wi is not None and wi in marked:
                marks.append(stable + ends[wi])
        return sorted(set(marks))

    def with_last_message(self, request: Request) -> list[int]:
        """The product's breakpoints plus one on the final message (Claude Code's placement)."""
        return sorted({*self.product(request), 2 + len(request.tools) + len(request.messages)})
