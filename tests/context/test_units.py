"""One unit for every number a user reads: the provider's tokens (the local count × the calibration
ratio), the unit of the window and the reserve (issue 24, item 6)."""

from __future__ import annotations

import math
import re

import pytest
from ctx_helpers import Log, run
from ctxagent.context.budget import Budget
from ctxagent.context.errors import ContextOverflowError
from ctxagent.context.monitor import format_report_table, red_flags


def _number(pattern: str, text: str) -> int:
    m = re.search(pattern, text)
    assert m is not None, text
    return int(m[1].replace(",", ""))


def test_the_overflow_error_compares_provider_tokens_with_the_window_minus_the_reserve() -> None:
    log = Log()
    log.user("请看这段内容：" + "很长的中文文本。" * 6_000)
    with pytest.raises(ContextOverflowError) as err:
        run(log, window=16_000, max_output=2_000, calibration_ratio=1.18)
    text = str(err.value)
    budget = Budget(16_000, max_output=2_000)
    # the limit is the window minus the reserve, as it says — not the local-count limit (14,000 / 1.18)
    assert f"the limit is {budget.limit:,} (window 16,000 − reserve {budget.reserve:,}" in text
    needed = _number(r"still needs ([\d,]+) tokens", text)
    largest = _number(r"user message \(event \d+\) of ([\d,]+) tokens", text)
    assert needed > budget.limit and largest <= needed
    from ctx_helpers import counter

    local = counter().count(log.events[0].data["text"])
    assert largest >= math.ceil(local * 1.18) - 5  # the message's own tokens, scaled (a few for framing)
    assert "as the provider counts them" in text


def test_red_flags_weigh_a_slice_in_the_unit_of_its_share() -> None:
    shares = {"system": 1_000, "warm": 1_000, "tools": 1_000}
    local = {"system": 4_500, "warm": 0, "tools": 0}
    assert not red_flags(total=4_500, tool_result_tokens=0, largest_tool_result=0, messages=1, window=20_000,
                         used=local, shares=shares)  # 4.5× by the local count
    flags = red_flags(total=4_500, tool_result_tokens=0, largest_tool_result=0, messages=1, window=20_000,
                      used=local, shares=shares, ratio=1.2)  # 5,400 provider tokens: 5.4×
    assert flags == ["the system slice holds 5.4× its budget (5,400 of 1,000 tokens)"]
    big = red_flags(total=9_000, tool_result_tokens=4_500, largest_tool_result=4_500, messages=1, window=20_000, ratio=1.2)
    assert "one tool result is 27% of the window (> 25%)" in big  # 5,400 of 20,000; locally 22.5 %


def test_the_report_table_says_its_unit_once() -> None:
    log = Log()
    log.user("hello")
    report = run(log, window=16_000, max_output=2_000, calibration_ratio=1.18).report
    table = format_report_table([report])
    assert f"{report.calibrated_total:,}" in table and report.calibrated_total != report.total
    assert table.count("as the provider counts them") == 1
