"""The price of each relief (issue 22): a clear or a compaction logs its prompt-cache effect — tokens kept,
dropped and re-written, and the cost before and after over the next calls — under the provider's rules."""

from __future__ import annotations

from pathlib import Path

import ctxagent.context as ctx
import pytest
from ctxagent.context.builder.relief_price import ReliefPrice, relief_price
from ctxagent.context.builder.step import record_step
from ctxagent.context.prompt_cache import rules_for
from ctxagent.context.request import Message, Request
from ctxagent.context.tokens import count_message, count_system

COUNTER = ctx.CachedCounter(ctx.get_counter("o200k_base"))
BIG = "\n".join(f"row {i}: 结果 value={i * 7}" for i in range(300))
PAGE = "\n".join(f"line {i}: 读取的内容保持原样, the content stays as read" for i in range(400))


def _msgs(*parts: tuple[str, str, int]) -> list[Message]:
    return [Message(role, text, event_id=eid) for role, text, eid in parts]  # type: ignore[arg-type]


def test_a_clear_rewrites_what_follows_it_and_frees_the_rest() -> None:
    u1, a1 = ("user", "read the log", 1), ("assistant", "reading it", 2)
    t1, u2 = ("user", BIG, 3), ("user", "now fix it", 4)
    prev = Request("system prompt", [*_msgs(u1, a1, t1), Message("user", "memory", kind="warm"), *_msgs(u2)], [])
    cur = Request("system prompt", [*_msgs(u1, a1, ("user", "[cleared: 300 rows]", 3), u2, ("assistant", "fixing", 5)),
                                    Message("user", "memory", kind="warm"), *_msgs(("user", "ok", 6))], [])
    rules = rules_for("anthropic:claude-sonnet-5-5")
    price = relief_price(prev, cur, COUNTER, 1.0, rules, cold=False)
    assert price is not None and price.kind == "clear" and not price.cold
    n = lambda m: count_message(m, COUNTER)  # noqa: E731
    assert price.kept == count_system("system prompt", COUNTER) + n(cur.messages[0]) + n(cur.messages[1])
    assert price.dropped == n(prev.messages[2])  # the old history after the change (the warm block is not history)
    assert price.rewritten == n(cur.messages[2]) + n(cur.messages[3])  # the stub and u2; the new reply is not counted
    before, after = price.costs(1)
    assert before == pytest.approx(0.1 * (price.kept + price.dropped))
    assert after == pytest.approx(0.1 * price.kept + 1.25 * price.rewritten)
    b10, a10 = price.costs(10)
    assert b10 - a10 == pytest.approx((before - after) + 9 * 0.1 * (price.dropped - price.rewritten))
    assert price.payback() == 0  # the rows were far bigger than the stub and u2: it pays at once
    assert ReliefPrice.from_dict(price.to_dict()) == price
    # the 1-hour TTL's writes cost more; a cold cache makes the relief free
    hour = relief_price(prev, cur, COUNTER, 1.0, rules_for("anthropic:claude-sonnet-5-5", "1h"), cold=False)
    assert hour is not None and hour.write == 2.0 and hour.ttl == "1h"
    cold = relief_price(prev, cur, COUNTER, 1.0, rules, cold=True)
    assert cold is not None and cold.costs(1)[1] < cold.costs(1)[0]
    # a request that only extends the previous history is no relief
    grown = Request("system prompt", [*prev.messages[:3], *_msgs(u2, ("assistant", "more", 5))], [])
    assert relief_price(prev, grown, COUNTER, 1.0, rules, cold=False) is None


def test_a_small_cut_near_the_start_costs_more_than_it_saves_for_a_while() -> None:
    long = [("user" if i % 2 else "assistant", f"step {i}: " + "text " * 200, i) for i in range(1, 30)]
    prev = Request("s", _msgs(*long), [])
    cur = Request("s", _msgs(long[0], ("assistant", "short", 2), *long[2:]), [])
    price = relief_price(prev, cur, COUNTER, 1.3, rules_for("anthropic:x"), cold=False)
    assert price is not None and price.freed > 0
    assert price.payback() is not None and price.payback() > 10  # 1.25 × most of the history, for 0.1 × 200 tokens a call


def test_each_compaction_and_clear_of_a_session_logs_its_price(tmp_path: Path) -> None:
    tools = [ctx.ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})]
    setup = ctx.StepSetup(system="You are a careful agent.", tools=tools, budget=ctx.Budget(6_000, max_output=512),
                          counter=COUNTER, model="anthropic:claude-sonnet-5-5")
    prices = []
    with ctx.SessionLog.create(tmp_path, "price-1") as log:
        ctx.record_system_prompt(log, setup.system, setup.tools)
        previous = None
        for turn in range(1, 8):
            log.append(ctx.UserData(text=f"read part {turn}", turn=turn))
            result = ctx.build_next(log, setup)
            step = record_step(log, setup, result, previous=previous)
            previous = result.request
            prices.append(step.report.context_report.report.get("relief_price"))
            log.append(ctx.AssistantData(text="reading", step=turn, turn=turn, stop_reason="tool_use",
                                         tool_calls=[ctx.ToolCall(id=f"c{turn}", name="read_file",
                                                                  arguments={"path": f"part{turn}.txt"})]))
            # rows at first (cut in place: clears), then whole pages (too big to keep: compactions)
            log.append(ctx.ToolResultData(call_id=f"c{turn}", name="read_file", content=BIG if turn < 4 else PAGE, turn=turn))
        events = list(log.events)
    logged = [p for p in prices if p]
    assert logged and prices[0] is None  # the first request has nothing before it
    assert {p["kind"] for p in logged} == {"clear", "compaction"}
    for p in logged:
        assert p["rewritten"] >= 0 and p["dropped"] > 0 and p["cost_before"] > 0 and p["cost_after"] > 0
        assert p["write"] == 1.25 and p["read"] == 0.1
    # the price rides in the report: a rebuild of every step is still byte-identical
    for n in range(1, 8):
        assert ctx.rebuild_step(events, n).verified
