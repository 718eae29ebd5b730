from __future__ import annotations

from ctx_helpers import Log, numbered_lines, run
from ctxagent.context.monitor import advice_for, format_report_table, red_flags, usage_text
from ctxagent.context.report import ContextReport
from hypothesis import given, strategies as st


def test_advice_thresholds() -> None:
    assert advice_for(74.9) == "ok"
    assert advice_for(75.0) == "compress"
    assert advice_for(89.99) == "compress"
    assert advice_for(90.0) == "new_session"
    assert advice_for(60, (0.5, 0.8)) == "compress"
    assert advice_for(85, (0.5, 0.8)) == "new_session"


def test_red_flags() -> None:
    assert red_flags(total=1000, tool_result_tokens=400, largest_tool_result=100, messages=10, window=10_000) == []
    flags = red_flags(total=1000, tool_result_tokens=600, largest_tool_result=3000, messages=51, window=10_000)
    assert len(flags) == 3
    assert "60% of the prompt" in flags[0] and "51 visible messages" in flags[1] and "30% of the window" in flags[2]


def test_report_from_build_has_flags_and_advice() -> None:
    log = Log()
    log.user("Read it all.")
    log.step("read_file", {"path": "big"}, numbered_lines(1500))
    res = run(log, strategy="full", window=32_000, max_output=1000)
    rep = res.report
    assert any("of the prompt" in f for f in rep.red_flags)
    assert any("of the window" in f for f in rep.red_flags)
    res2 = run(log, window=32_000, max_output=1000, thresholds=(0.1, 0.95))
    assert res2.report.advice == "compress"


def _rep(step: int, usage: float, **kw) -> ContextReport:  # noqa: ANN003
    return ContextReport(step=step, turn=kw.pop("turn", 1), window=100_000, budget={}, used={}, total=int(usage * 1000),
                         usage_pct=usage, calibrated_total=int(usage * 1000), calibration_ratio=1.1, system_in_window=True,
                         oldest_visible_turn=1, messages=3, advice=advice_for(usage), **kw)


def test_format_report_table() -> None:
    reports = [
        _rep(1, 12.0),
        _rep(2, 80.0, pruned=2, spilled=1).to_dict(),  # dicts from the session log work too
        _rep(3, 93.5, compacted=[1, 9], summary_method="extractive", red_flags=["tool results are 70% of the prompt (> 50%)"]),
    ]
    table = format_report_table(reports, title="session abc")
    lines = table.splitlines()
    assert lines[0] == "session abc" and "window 100,000" in lines[1] and "×1.10" in lines[1]
    header = lines[2]
    for col in ("step", "turn", "tokens", "usage", "system", "loss", "actions", "status"):
        assert col in header
    assert "round" not in table
    assert "12.0%" in lines[4] and "ok" in lines[4]
    assert "spilled 1, pruned 2" in lines[5] and "WARN" in lines[5]
    assert "compacted 1–9 (extractive)" in lines[6] and "CRITICAL" in lines[6]
    assert any("at step 2:" in line and "/compact" in line for line in lines)
    assert any("at step 3:" in line and "/new" in line for line in lines)
    assert any("red flag at step 3" in line for line in lines)
    assert any(line.startswith("loss: the share of the conversation") for line in lines)
    extra = format_report_table(reports, extra_actions=[[], ["compacted events 0–4 (model)"], []]).splitlines()
    assert "compacted events 0–4 (model), spilled 1, pruned 2" in extra[4]
    assert format_report_table([]) == "no context reports in this session"
    calm = format_report_table([_rep(1, 10.0)])
    assert "safe range" in calm


def test_a_slice_five_times_over_its_share_is_a_red_flag() -> None:
    shares = {"system": 900, "hot": 2400, "warm": 900, "tools": 1080, "reserve": 1024}
    calm = red_flags(total=3000, tool_result_tokens=100, largest_tool_result=100, messages=4, window=6000,
                     used={"system": 800, "hot": 9000, "warm": 1000, "tools": 4000}, shares=shares)
    assert calm == []  # over its share, not 5× over; hot takes what the others leave
    flags = red_flags(total=8000, tool_result_tokens=100, largest_tool_result=100, messages=4, window=60_000,
                      used={"system": 4600, "hot": 100, "warm": 0, "tools": 400}, shares=shares)
    assert flags == ["the system slice holds 5.1× its budget (4,600 of 900 tokens)"]


@given(st.floats(min_value=0, max_value=100, allow_nan=False), st.sampled_from([0, 1]))
def test_a_shown_percentage_is_never_above_the_truth_nor_past_its_breakpoint(pct: float, digits: int) -> None:
    """usage_text, the one place a usage percentage is formatted: 89.9 % reads "89%" beside the 75 %
    level, never "90%" (issue 24, item 10); the number shown is at most the truth, within one step."""
    shown = usage_text(pct, digits)
    value = float(shown.rstrip("%"))
    assert value <= pct and pct - value < 10 ** -digits + 1e-9
    assert advice_for(value) == advice_for(pct)
    assert usage_text(89.9) == "89%" and usage_text(90.0) == "90%" and usage_text(89.96, 1) == "89.9%"
