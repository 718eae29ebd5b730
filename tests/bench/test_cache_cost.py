"""The prompt-cache simulation on hand-made blocks with known bills, and the product's breakpoints read off its provider."""

from __future__ import annotations

import dataclasses

import pytest
from ctxagent.agent.providers.anthropic_cache import wire_group_ends
from ctxagent.context.request import Message, Request, ToolCall, ToolSpec
from ctxagent.tui.lab.bench.cache_cost import (
    RULES,
    Bill,
    Breakpoints,
    CacheRules,
    CacheSim,
    reported_bill,
)

ANTHROPIC = RULES["anthropic"]
OPENAI = RULES["openai"]


def blocks(*sizes: int, prefix: str = "b") -> list[tuple[str, int]]:
    return [(f"{prefix}{i}", n) for i, n in enumerate(sizes)]


def test_anthropic_writes_at_breakpoints_and_reads_them_back() -> None:
    sim = CacheSim(ANTHROPIC)
    first = blocks(2000, 300, 400)
    # breakpoint after the stable block only: it is written, the rest is billed in full
    assert sim.step(first, [1]) == Bill(uncached=700, read=0, write=2000)
    second = blocks(2000, 300, 400, 500)
    assert sim.step(second, [1]) == Bill(uncached=1200, read=2000, write=0)
    # a breakpoint on the last block: the stable prefix is read, the rest up to it written
    assert sim.step(second, [1, 4]) == Bill(uncached=0, read=2000, write=1200)
    # the next request extends it: everything before is read
    third = [*second, ("new", 100)]
    assert sim.step(third, [1, 5]) == Bill(uncached=0, read=3200, write=100)
    assert Bill(700, 2000, 1200).cost(ANTHROPIC) == pytest.approx(700 + 0.1 * 2000 + 1.25 * 1200)


def test_anthropic_changed_block_min_size_lookback_and_ttl() -> None:
    sim = CacheSim(ANTHROPIC)
    sim.step(blocks(1500, 200, 200), [3])
    # a rewritten block in the middle (a prune, a compaction) ends the hit: no entry matches any more
    changed = [("b0", 1500), ("edited", 150), ("b2", 200)]
    assert sim.step(changed, [3]) == Bill(uncached=0, read=0, write=1850)
    # prefixes under 1,024 tokens are never cached
    small = CacheSim(ANTHROPIC)
    assert small.step(blocks(500, 100), [2]) == Bill(uncached=600, read=0, write=0)
    assert small.step(blocks(500, 100), [2]) == Bill(uncached=600, read=0, write=0)
    # a breakpoint looks back at most 20 blocks for an earlier entry
    far = CacheSim(ANTHROPIC)
    base = blocks(1100)
    far.step(base, [1])
    grown = base + [(f"m{i}", 10) for i in range(25)]
    assert far.step(grown, [26]).read == 0
    near = CacheSim(ANTHROPIC)
    near.step(base, [1])
    assert near.step(base + [(f"m{i}", 10) for i in range(19)], [20]).read == 1100
    # entries expire ttl seconds after their last use, when calls have times
    timed = CacheSim(ANTHROPIC)
    timed.step(base, [1], now=0.0)
    assert timed.step(base, [1], now=200.0).read == 1100  # the hit refreshes the entry
    assert timed.step(base, [1], now=450.0).read == 1100
    assert timed.step(base, [1], now=451.0 + 300).read == 0


def test_openai_automatic_prefix_in_128_token_steps() -> None:
    sim = CacheSim(OPENAI)
    assert sim.step(blocks(1000, 500)) == Bill(uncached=1500, read=0, write=0)
    # 1,500 tokens match: served in 128-token steps (1,408), the rest billed
    assert sim.step(blocks(1000, 500, 700)) == Bill(uncached=2200 - 1408, read=1408, write=0)
    # a different first block: nothing matches
    assert sim.step([("other", 1000), ("b1", 500)]).read == 0
    # under 1,024 tokens nothing is cached
    tiny = CacheSim(OPENAI)
    tiny.step(blocks(600))
    assert tiny.step(blocks(600, 10)).read == 0
    assert Bill(100, 1000, 0).cost(OPENAI) == pytest.approx(200)
    custom = CacheRules("gpt-4o", read=0.5, write=1.0, min_tokens=1024, ttl_s=600, automatic=True, granularity=128)
    assert Bill(100, 1000, 0).cost(custom) == pytest.approx(600)


def test_scale_turns_local_blocks_into_provider_tokens() -> None:
    sim = CacheSim(OPENAI)
    sim.step(blocks(1000), scale=1.2)
    assert sim.step(blocks(1000, 100), scale=1.2) == Bill(uncached=1320 - 1152, read=1152, write=0)


def test_reported_bill() -> None:
    assert reported_bill(51800, 51161, 638) == Bill(1, 51161, 638)
    assert reported_bill(1662, 0, None) == Bill(1662, 0, 0)
    assert reported_bill(100, 150, 10) == Bill(0, 100, 0)  # never more than was sent


def test_breakpoints_follow_the_product_provider() -> None:
    bp = Breakpoints()
    tools = [ToolSpec("read_file", "Read a file.", {"type": "object"}), ToolSpec("shell", "Run it.", {"type": "object"})]
    msgs = [Message("user", "hi"), Message("assistant", "", tool_calls=[ToolCall("c1", "read_file", {"path": "a.py"})]),
            Message("tool", "x = 1", tool_call_id="c1", name="read_file"), Message("user", "more")]
    req = Request("You are an agent.", msgs, tools)
    # the provider marks the stable prefix (overhead, system, 2 tools) and the end of the history
    assert bp.product(req) == [4, 8]
    assert bp.with_last_message(req) == [4, 8]
    warm = Request("You are an agent.", [*msgs[:3], Message("user", "pins", kind="warm")], tools)
    assert bp.product(warm) == [4, 7]  # ... which ends before the per-step warm block
    assert bp.product(Request("", msgs, [])) == [6]  # no stable prefix: only the history end is marked
    # the part the engine already cut ends in the wire message holding the tool result (msgs[2], with "more")
    cut = Request("You are an agent.", [*msgs, Message("assistant", "ok"), Message("user", "again")], tools, stable_messages=3)
    assert bp.product(cut) == [4, 8, 10]
    # ... and where it ended at the previous cut (the first message's wire message): the fourth breakpoint
    anchored = dataclasses.replace(cut, anchor_messages=1)
    assert bp.product(anchored) == [4, 5, 8, 10]
    # the bill after a cut that moved the cut part's end more than 20 blocks: the anchor finds the old entry
    old = [("sys", 2000), *[(f"m{i}", 100) for i in range(30)]]
    new = [("sys", 2000), *[(f"m{i}", 100) for i in range(5)], *[(f"c{i}", 10) for i in range(25)], ("n", 100)]
    for anchors, read in (([], 2000.0), ([6], 2500.0)):
        sim = CacheSim(ANTHROPIC)
        sim.step(old, [1, 6, 31])
        assert sim.step(new, [1, *anchors, 30, 32]).read == read


def test_wire_groups_mirror_the_anthropic_wire_format() -> None:
    msgs = [Message("user", "a"), Message("assistant", "", tool_calls=[ToolCall("c1", "t", {})]),
            Message("tool", "r1", tool_call_id="c1"), Message("user", "warm", kind="warm"),
            Message("assistant", "  "), Message("user", "b"), Message("assistant", "done")]
    # user | assistant | tool+warm (+ the empty assistant dropped) + user | assistant
    assert wire_group_ends(msgs) == [1, 2, 6, 7]


def test_one_hour_ttl_rules_and_the_real_bill() -> None:
    from ctxagent.tui.lab.bench.cache_cost import real_cost, transcript_ttl

    long = ANTHROPIC.with_ttl("1h")
    assert (long.ttl_s, long.write) == (3600.0, 2.0) and ANTHROPIC.with_ttl("5m") is ANTHROPIC
    assert OPENAI.with_ttl("1h") is OPENAI  # no such option: the rules stay
    assert transcript_ttl([(500, 400), (100, 0)]) == "1h" and transcript_ttl([(500, 0), (10, None)]) == "5m"
    assert transcript_ttl([(0, 0)]) == "5m"
    bill = Bill(uncached=10, read=1000, write=500)
    # 400 of the 500 written tokens with the 1-hour TTL: 2 ×, the other 100 at 1.25 ×
    assert real_cost(bill, 400, ANTHROPIC) == pytest.approx(10 + 100 + 1.25 * 100 + 2.0 * 400)
    assert real_cost(bill, None, ANTHROPIC) == pytest.approx(bill.cost(ANTHROPIC))
    timed = CacheSim(long)
    timed.step(blocks(1100), [1], now=0.0)
    assert timed.step(blocks(1100), [1], now=3000.0).read == 1100  # an hour's life
    assert timed.step(blocks(1100), [1], now=3000.0 + 3601).read == 0


def test_each_model_has_its_own_cache() -> None:
    sim = CacheSim(ANTHROPIC)
    sim.step(blocks(2000, 100), [1], model="claude-opus-4-6")
    assert sim.step(blocks(2000, 100), [1], model="claude-haiku-4-5").read == 0  # a switch meets a cold cache
    assert sim.step(blocks(2000, 100), [1], model="claude-opus-4-6").read == 2000


def test_an_account_prices_each_call_with_its_weight() -> None:
    from ctxagent.tui.lab.bench.cache_cost import Account

    acc = Account()
    acc.charge(Bill(100, 1000, 0), OPENAI)  # 100 + 0.1 · 1000
    acc.charge(Bill(100, 1000, 0), OPENAI, weight=0.2)  # a call for a model at a fifth of the price
    acc.charge(Bill(50, 0, 0), OPENAI, extra=True)  # a server's summarization iteration
    acc.charge_extra(30.0)  # a summary's output, priced by the caller
    assert acc.cost == pytest.approx(200 + 40 + 50 + 30) and acc.extra_cost == pytest.approx(80)
    assert acc.cost_uncached == pytest.approx(1100 + 220 + 50 + 30) and acc.tokens.total == 2250
    assert Account.from_dict(dataclasses.asdict(acc)) == acc


def test_prices_come_from_the_registry_and_the_summary_model_is_the_cheaper_sibling() -> None:
    from ctxagent.tui.lab.bench.prices import Pricing, price_of, summary_model

    p = Pricing("claude-opus-4-6")
    assert p.input_weight("claude-opus-4-6") == 1.0 and p.input_weight(None) == 1.0
    assert p.input_weight("claude-haiku-4-5") == pytest.approx(1.0 / 5.0)
    assert p.output_weight("claude-opus-4-6") == pytest.approx(25.0 / 5.0)
    assert summary_model("claude-opus-4-6") == "claude-haiku-5-5"
    assert p.summarization("claude-opus-4-6", 1000, 100) == pytest.approx(1000 * 0.10 / 5.0 + 100 * 0.50 / 5.0)
    g = Pricing("gemini-3-pro")  # not in the registry: the bench's own, marked as assumed
    assert price_of("gemini-3-pro").known == "assumed" and summary_model("gemini-3-pro") == "gemini-3-flash"
    assert g.summarization(None, 1000, 100) == pytest.approx(1000 * 0.5 / 2.0 + 100 * 3.0 / 2.0)
    unknown = Pricing("some-local-model")
    assert unknown.input_weight("other-local") == 1.0 and unknown.output_weight(None) == 5.0
