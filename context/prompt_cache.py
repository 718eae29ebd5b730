"""The providers' prompt-cache rules: what a cached token costs, what a write costs, how long an entry
lives, and which provider a model label's cache follows. One definition, read by the builder (where the
cache is cold, so relief is free there; the price of each relief), the report, the context_status
tool, and the bench's cache simulation (tui/lab/bench/cache_cost.py).

- **anthropic** — reads 0.1 ×, writes 1.25 × the input price with the default 5-minute TTL; with the
  1-hour option (config `cache_ttl = "1h"`, sent as `cache_control: {"type": "ephemeral", "ttl": "1h"}`)
  an entry lives an hour and a write costs 2 ×. Entries only at `cache_control` breakpoints, for
  prefixes of ≥ 1,024 tokens; a breakpoint looks back at most 20 blocks.
- **openai** — automatic prefix caching for prompts of ≥ 1,024 tokens, hits in 128-token steps, no
  write surcharge; an entry lives 5 to 10 minutes of inactivity (we take 10). Cached input at 0.1 × as
  for the GPT-5 family (GPT-4.1: 0.25 ×, GPT-4o: 0.5 ×). It has no TTL option here: `cache_ttl` is
  Anthropic's.

A model label is `provider:model`; any other provider (a scripted model, a local server) is taken to
follow Anthropic's 5-minute rule, which is also the shortest life, so "cold" is never said too late.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

CACHE_TTLS = ("5m", "1h")  # the config key `cache_ttl`'s values (Anthropic's two options)


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
    write_1h: float | None = None  # price of a write with the 1-hour TTL (Anthropic: 2 ×); None: no such option

    def with_ttl(self, ttl: str) -> CacheRules:
        """These rules with the 1-hour TTL ("1h": longer life, the 1-hour write price) or as they are ("5m")."""
        if ttl != "1h" or self.write_1h is None:
            return self
        return replace(self, ttl_s=3600.0, write=self.write_1h)

    @property
    def ttl(self) -> str:
        """"1h" for rules with the 1-hour TTL, else "5m" (the option `cache_ttl` names)."""
        return "1h" if self.write_1h is not None and self.write == self.write_1h else "5m"


RULES: dict[str, CacheRules] = {
    "anthropic": CacheRules("anthropic", read=0.1, write=1.25, min_tokens=1024, ttl_s=300.0, automatic=False,
                            write_1h=2.0),
    "openai": CacheRules("openai", read=0.1, write=1.0, min_tokens=1024, ttl_s=600.0, automatic=True, lookback=0,
                         granularity=128),
}
SHORTEST_TTL_S = min(r.ttl_s for r in RULES.values())


def rules_for(model: str, ttl: str = "5m") -> CacheRules:
    """The cache rules of the provider serving `model` ("provider:model"), with `ttl` where it has the option."""
    provider = model.partition(":")[0].strip().lower() if ":" in model else ""
    return RULES.get(provider, RULES["anthropic"]).with_ttl(ttl)
