"""The usage gauge: segment widths, breakpoint colours and words, sparkline, live updates."""

from __future__ import annotations

import pytest
from ctxagent.tui.app.widgets.gauge import (
    LEVEL_STYLE,
    LEVEL_WORD,
    UsageGauge,
    segment_widths,
    sparkline,
    usage_level,
)
from tui_helpers import HostApp, make_report

pytestmark = pytest.mark.anyio


def test_levels_switch_exactly_at_75_and_90() -> None:
    assert usage_level(0) == "ok"
    assert usage_level(74.9) == "ok"
    assert usage_level(75) == "compress"
    assert usage_level(89.99) == "compress"
    assert usage_level(90) == "new_session"
    assert usage_level(130) == "new_session"


def test_levels_follow_the_configured_thresholds_like_the_engine() -> None:
    from ctxagent.context.monitor import advice_for

    for pct in (10, 49.9, 50, 64.9, 65, 80):
        assert usage_level(pct, (0.5, 0.65)) == advice_for(pct, (0.5, 0.65))
    assert usage_level(66, (0.5, 0.65)) == "new_session" and usage_level(66) == "ok"


def test_segments_fill_usage_share_of_bar_and_sum_to_width() -> None:
    for pct in (0, 3, 42, 75, 89, 90, 99, 100):
        widths = dict(segment_widths(make_report(pct), 60))
        assert sum(widths.values()) == 60
        filled = 60 - widths["free"]
        assert abs(filled - 60 * pct / 100) <= 1, (pct, widths)
    w = dict(segment_widths(make_report(50), 100))
    assert list(w) == ["system", "hot", "warm", "tools", "reserve", "free"]
    assert w["hot"] > w["system"] > 0 and w["warm"] > 0 and w["reserve"] > 0


def test_a_full_window_never_looks_healthy() -> None:
    widths = dict(segment_widths(make_report(97), 40))
    assert widths["free"] <= 2  # almost no free cells left at 97 %
    assert usage_level(97) == "new_session"
    assert "FULL" in LEVEL_WORD["new_session"] and "red" in LEVEL_STYLE["new_session"]


def test_tiny_slice_still_visible() -> None:
    r = make_report(80, window=200_000)
    r.used["warm"] = 10  # 10 tokens of 200k: still one cell
    widths = dict(segment_widths(r, 50))
    assert widths["warm"] == 1
    assert sum(widths.values()) == 50


def test_sparkline_scales_and_keeps_newest() -> None:
    assert sparkline([0, 50, 100], 10) == "▁▅█"
    assert sparkline([10.0] * 30, 5) == sparkline([10.0] * 5, 5)
    assert len(sparkline(list(range(100)), 8)) == 8
    assert sparkline([], 5) == ""


def _spans_with(text, needle: str) -> list[str]:
    plain = text.plain
    i = plain.index(needle)
    return [str(s.style) for s in text.spans if s.start <= i < s.end]


async def test_gauge_colours_follow_each_report() -> None:
    gauge = UsageGauge()
    app = HostApp(gauge)
    async with app.run_test(size=(80, 10)) as pilot:
        for step, (pct, level) in enumerate([(40, "ok"), (78, "compress"), (93, "new_session")], start=1):
            gauge.update_report(make_report(pct, step=step))
            await pilot.pause()
            rendered = gauge.render()
            assert f"{pct:3.0f}%" in rendered.plain
            assert LEVEL_STYLE[level] in _spans_with(rendered, f"{pct:3.0f}%")
            assert gauge.has_class(f"-{level}")
            assert f"step {step}" in rendered.plain
        assert gauge.history == [40, 78, 93]
        assert "FULL" in gauge.render().plain
        assert "compact soon" not in gauge.render().plain


async def test_gauge_legend_lists_every_slice_and_red_flags() -> None:
    gauge = UsageGauge()
    async with HostApp(gauge).run_test(size=(100, 10)) as pilot:
        gauge.update_report(make_report(60, red_flags=["tool results are 70% of the prompt"]))
        await pilot.pause()
        legend = gauge.render().plain.splitlines()[1]
        for word in ("sys", "hot", "warm", "tools", "res", "free"):
            assert word in legend
        assert "⚑ 1" in legend
        gauge.reset()
        await pilot.pause()
        assert "no context built yet" in gauge.render().plain


async def test_gauge_fits_80_columns() -> None:
    gauge = UsageGauge()
    async with HostApp(gauge).run_test(size=(80, 10)) as pilot:
        gauge.update_report(make_report(91))
        await pilot.pause()
        first = gauge.render().plain.splitlines()[0]
        assert len(first) <= 80
        assert "91%" in first


async def test_no_color_still_says_full(monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    gauge = UsageGauge()
    app = HostApp(gauge)
    assert app.no_color  # Textual renders monochrome; the words and glyphs must carry the meaning
    async with app.run_test(size=(80, 10)) as pilot:
        gauge.update_report(make_report(95))
        await pilot.pause()
        from tui_helpers import screen_text

        text = screen_text(app)
        assert "95%" in text and "FULL" in text and "·" in text and "█" in text
