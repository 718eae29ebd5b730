"""Relief reaches every request: when a large stable prefix leaves little room, the reply's reserve yields
and every tool result and long call argument is cleared to one line, instead of an overflow; and a
calibration ratio that shifts mid-session never lets a request exceed the window."""

from __future__ import annotations

import math

import pytest
from ctxagent.context.budget import MIN_REPLY_TOKENS, Budget, default_max_output
from ctxagent.context.builder.dispatch import build
from ctxagent.context.errors import ContextOverflowError
from ctxagent.context.history import Event
from ctxagent.context.tokens import count_request

from .ctx_helpers import Log, counter, inputs

RULES = [f"Rule {i}: keep module {i} small and typed." for i in range(3000)]


def _prefix(tokens: int) -> str:
    """A stable prefix (system prompt) of about `tokens` local tokens."""
    n = next(n for n in range(100, len(RULES), 50) if counter().count(" ".join(RULES[:n])) >= tokens)
    return " ".join(RULES[:n])


def _session(steps: int) -> Log:
    log = Log()
    log.user("Fix the parser in lib/parse.py. Never touch the migrations folder. 不要修改配置文件。")
    for i in range(steps):
        log.step("read_file", {"path": f"lib/mod_{i}.py"}, "\n".join(f"def f{i}_{k}(x): return x + {k}" for k in range(120)))
        log.step("edit_file", {"path": f"lib/mod_{i}.py", "new_text": "x = 1\n" * 400}, "ok")
    return log


def _fits(res_request: object, budget: Budget, ratio: float) -> None:
    local = count_request(res_request, counter())  # type: ignore[arg-type]
    reply = res_request.max_tokens  # type: ignore[attr-defined]
    assert reply >= budget.reply_floor
    assert math.ceil(local * ratio) + reply <= budget.window and local + reply <= budget.window


def test_the_default_reply_reserve_is_one_rule() -> None:
    assert default_max_output(200_000) == 8192 and default_max_output(32_000) == 4000
    assert default_max_output(4_000) == MIN_REPLY_TOKENS and default_max_output(200_000, 4096) == 4096


def test_the_reply_yields_when_the_prefix_leaves_no_room() -> None:
    c = counter()
    log = _session(6)
    system = _prefix(11_300)
    budget = Budget(16_000, max_output=4000)
    assert c.count(system) > budget.limit - 1000  # the stable prefix alone nearly fills W − reserve
    res = build(inputs(log, system=system, budget=budget))
    assert res.request.max_tokens < budget.max_output
    _fits(res.request, budget, 1.0)
    assert any("reserve yields" in n for n in res.report.notes)
    text = "\n".join(m.content for m in res.request.messages)
    assert "migrations folder" in text and "不要修改配置文件" in text  # the constraints stay


def test_a_prefix_larger_than_the_window_is_still_a_clear_error() -> None:
    with pytest.raises(ContextOverflowError, match="system prompt and tool schemas alone"):
        build(inputs(_session(2), system=_prefix(16_500), budget=Budget(16_000, max_output=4000)))


@pytest.mark.parametrize("shift", [(1.0, 1.45), (1.3, 0.9), (1.0, 1.2, 1.6, 1.1)])
def test_a_calibration_ratio_that_shifts_mid_session_never_exceeds_the_window(shift: tuple[float, ...]) -> None:
    system = _prefix(7_000)
    budget = Budget(16_000, max_output=4000)
    log = Log()
    log.user("Port the exporter to streaming. Do not add a dependency.")
    steps = 24
    for step in range(1, steps + 1):
        ratio = shift[min(len(shift) - 1, (step - 1) * len(shift) // steps)]  # the calibrator's ratio jumps mid-session
        res = build(inputs(log, system=system, budget=budget, step=step, calibration_ratio=ratio))
        _fits(res.request, budget, ratio)
        for rec in res.compactions:  # as the agent appends them
            assert rec.event_id == len(log.events)
            log.add("compaction", **rec.data.to_data())
        log.step("read_file", {"path": f"lib/part_{step}.py"}, "\n".join(f"line {step}.{k}: value = {k * step}" for k in range(150)))
        if step % 5 == 0:
            log.user(f"Also handle case {step}.")


AREAS = ["parser", "lexer", "cache", "router", "store", "codec", "queue", "auth", "metrics", "logger", "pool", "index",
         "shard", "replica", "backup", "scheduler", "mailer", "billing", "search", "export"]


def test_a_summary_written_with_more_room_is_shortened_when_the_ratio_rises() -> None:
    """Summaries made while the prefix left room (ratio 1.0) are larger than what it leaves once the ratio climbs
    (1.45: the prefix alone is over W − reserve): they are shown shortened, under their read_event header, and the
    request fits instead of failing; the log keeps the summaries whole."""
    c = counter()
    system = _prefix(9_000)
    budget = Budget(16_000, max_output=4000)
    log = Log()
    for step, area in enumerate(AREAS, start=1):
        log.user(f"For the {area}, let's use the {area}_v{step} design with a bounded buffer of {step * 64} entries, "
                 f"and never change the {area} wire format in lib/{area}/wire.py. 我们决定 {area} 改用 v{step}。")
        log.step("read_file", {"path": f"lib/{area}/core.py"},
                 "\n".join(f"def {area}_handler_{k}(request): return route_{k}(request)" for k in range(160)),
                 text=f"I will switch the {area} to {area}_v{step}; TODO: add tests for the {area} buffer limit.")
        res = build(inputs(log, system=system, budget=budget, step=step, calibration_ratio=1.0))
        _fits(res.request, budget, 1.0)
        for rec in res.compactions:  # as the agent appends them
            log.add("compaction", **rec.data.to_data())
    whole = [e.data["summary"] for e in log.events if e.kind == "compaction"]
    assert max(c.count(s) for s in whole) > 600  # written with room to spare
    ratio = 1.45
    assert math.ceil(c.count(system) * ratio) > budget.limit  # the prefix alone is over W − reserve now
    log.user("Keep going with the next module.")
    res = build(inputs(log, system=system, budget=budget, step=len(AREAS) + 1, calibration_ratio=ratio))
    _fits(res.request, budget, ratio)
    shown = [m for m in res.request.messages if m.kind == "summary"]
    assert shown and all("read_event id=N" in m.content for m in shown)
    assert all(c.count(m.content) < 600 for m in shown)  # shown shorter than any was logged...
    assert [e.data["summary"] for e in log.events if e.kind == "compaction"] == whole  # ... and the log is untouched
    assert any("改用" in m.content for m in shown)  # the shortened sections still carry the decisions
    assert "omitted for space" in res.warm_text  # the working-memory block was re-made within what was left
    # a re-build from the log with this build's records and its warm block as sent (inspect's) is the same request
    events = list(log.events)
    for rec in res.compactions:
        events.append(Event(len(events), "compaction", rec.data.to_data()))
    again = build(inputs(events, system=system, budget=budget, step=len(AREAS) + 1, calibration_ratio=ratio,
                         turn=log.turn, warm_override=res.warm_text))
    assert again.request.messages == res.request.messages and again.request.max_tokens == res.request.max_tokens
