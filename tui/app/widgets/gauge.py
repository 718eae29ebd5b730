"""The usage gauge: one segmented bar of the window — system, hot, warm, tools, reserve, free.

The bar's filled length is the report's calibrated `usage_pct` (what the provider will count), split
among the slices in proportion to what the build put in each. The percentage is coloured at the
breakpoints — the engine's rule (`context.monitor.advice_for`, at the session's configured
thresholds, 75 % and 90 % by default), the same rule that raises the app's prompts — and also says
it in words and glyphs so that with NO_COLOR a full window still never looks healthy. A sparkline
shows usage per step of the session.
"""

from __future__ import annotations

from ctxagent.context import (
    DEFAULT_THRESHOLDS,
    ContextReport,
    advice_for,
    usage_text,
)
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

SEGMENTS = ("system", "hot", "warm", "tools", "reserve", "free")
SHORT = {"system": "sys", "hot": "hot", "warm": "warm", "tools": "tools", "reserve": "res", "free": "free"}
# Distinct glyphs per slice so the bar reads without colour too.
GLYPH = {"system": "█", "hot": "█", "warm": "▓", "tools": "▒", "reserve": "░", "free": "·"}
STYLE = {
    "system": "bold #8a8aff",
    "hot": "#4fb3ff",
    "warm": "#c88cff",
    "tools": "#e0a040",
    "reserve": "#808080",
    "free": "#3a3a3a",
}
# Levels are the engine's advice: "ok" | "compress" | "new_session".
LEVEL_STYLE = {"ok": "bold green", "compress": "bold black on yellow", "new_session": "bold white on red"}
LEVEL_WORD = {"ok": "", "compress": " ▲ compact soon", "new_session": " ■ FULL"}
SPARK = "▁▂▃▄▅▆▇█"
SPARK_LABEL = " per step "  # what the sparkline is: usage of the window at each step, the newest on the right


def usage_level(pct: float, thresholds: tuple[float, float] = DEFAULT_THRESHOLDS) -> str:
    """The breakpoint level of a usage percentage (the engine's rule, see `advice_for`)."""
    return advice_for(pct, thresholds)


def slice_tokens(report: ContextReport) -> dict[str, int]:
    """Tokens per segment in one unit, the provider's: the slices' local counts scaled by the
    calibration so they add up to the calibrated prompt exactly (largest remainder), the reserve the
    build set aside, and the free rest — the three add up to the window. /context shows the same."""
    prompt = ("system", "hot", "warm", "tools")
    raw = {s: max(0, int(report.used.get(s, 0))) for s in prompt}
    total, whole = int(report.calibrated_total), sum(raw.values())
    exact = {s: (raw[s] * total / whole if whole else 0.0) for s in prompt}
    out = {s: int(exact[s]) for s in prompt}
    for s in sorted(prompt, key=lambda x: exact[x] - out[x], reverse=True)[: max(0, total - sum(out.values()))]:
        out[s] += 1
    out["reserve"] = max(0, int(report.used.get("reserve") or report.budget.get("reserve", 0)))
    out["free"] = max(0, int(report.window) - total - out["reserve"])
    return out


def segment_widths(report: ContextReport, width: int) -> list[tuple[str, int]]:
    """Cells per segment for a bar of `width` cells; the filled part is `usage_pct` of the bar.

    Largest-remainder rounding, so the cells add up to `width` exactly; a slice holding anything
    gets at least one cell while room allows, so nothing that is in the window is invisible.
    """
    width = max(0, width)
    pct = min(100.0, max(0.0, float(report.usage_pct)))
    tokens = slice_tokens(report)
    filled_names = ("system", "hot", "warm", "tools", "reserve")
    raw_used = sum(tokens[s] for s in filled_names)
    filled = round(width * pct / 100.0)
    if pct > 0 and filled == 0 and width:
        filled = 1
    shares: dict[str, float] = {}
    for s in filled_names:
        shares[s] = filled * tokens[s] / raw_used if raw_used else 0.0
    if not raw_used and filled:
        shares["hot"] = float(filled)
    cells = {s: int(v) for s, v in shares.items()}
    rest = filled - sum(cells.values())
    for s in sorted(filled_names, key=lambda n: shares[n] - cells[n], reverse=True)[: max(0, rest)]:
        cells[s] += 1
    # Give a visible cell to any non-empty slice, taken from the biggest one.
    for s in filled_names:
        if tokens[s] > 0 and cells[s] == 0:
            donor = max(filled_names, key=lambda n: cells[n])
            if cells[donor] > 1:
                cells[donor] -= 1
                cells[s] = 1
    out = [(s, cells[s]) for s in filled_names]
    out.append(("free", width - filled))
    return out


def sparkline(values: list[float], width: int, top: float = 100.0) -> str:
    """Usage per step as block characters, the newest on the right (last `width` values)."""
    if width <= 0 or not values:
        return ""
    tail = values[-width:]
    chars = []
    for v in tail:
        frac = min(1.0, max(0.0, v / top if top else 0.0))
        chars.append(SPARK[min(len(SPARK) - 1, int(frac * (len(SPARK) - 1) + 0.5))])
    return "".join(chars)


def human_tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 10_000:
        return f"{n / 1000:.0f}k"
    if n >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)


def render_bar(report: ContextReport | None, width: int) -> Text:
    text = Text()
    if report is None:
        text.append("·" * width, style=STYLE["free"])
        return text
    for name, cells in segment_widths(report, width):
        if cells:
            text.append(GLYPH[name] * cells, style=STYLE[name])
    return text


class UsageGauge(Widget):
    """Two lines: `ctx [bar]  82% ▲ compact soon  per step ▁▂▅▇` and a legend of tokens per slice
    (with `⚑ 2 red flags` when the build raised any: /context lists them)."""

    DEFAULT_CSS = """
    UsageGauge { height: 2; width: 1fr; }
    """

    report: reactive[ContextReport | None] = reactive(None, layout=False)
    history: reactive[list[float]] = reactive(list, always_update=True)
    thresholds: reactive[tuple[float, float]] = reactive(DEFAULT_THRESHOLDS)  # the session's compress_at, new_session_at
    relief = ""  # the newest clear's or compaction's cache price, a few characters (relief_price.relief_label)

    def update_report(self, report: ContextReport) -> None:
        """Show a new build; append its usage to the per-step sparkline; keep its relief's price label."""
        self.history = [*self.history, float(report.usage_pct)]
        if report.relief_price:  # imported here: the builder's modules are not needed for the first frame
            from ctxagent.context import ReliefPrice, relief_label

            self.relief = relief_label(report.step, ReliefPrice.from_dict(report.relief_price))
        self.report = report

    def reset(self) -> None:
        self.history = []
        self.relief = ""
        self.report = None

    @property
    def level(self) -> str:
        return usage_level(self.report.usage_pct, self.thresholds) if self.report else "ok"

    def watch_report(self, report: ContextReport | None) -> None:
        self._set_level_class()

    def watch_thresholds(self, thresholds: tuple[float, float]) -> None:
        self._set_level_class()

    def _set_level_class(self) -> None:
        level = self.level
        for lvl in LEVEL_STYLE:
            self.set_class(self.report is not None and level == lvl, f"-{lvl}")

    def render(self) -> Text:
        width = max(20, self.size.width or 80)
        report = self.report
        pct = float(report.usage_pct) if report else 0.0
        level = self.level
        spark_w = min(16, max(0, width // 6))
        label = f" {usage_text(pct):>4}{LEVEL_WORD[level]} "
        spark_label = SPARK_LABEL if self.history and spark_w else ""
        bar_w = max(10, width - 5 - len(label) - len(spark_label) - spark_w - 1)
        line = Text("ctx ", style="bold")
        line.append("[")
        line.append_text(render_bar(report, bar_w))
        line.append("]")
        line.append(label, style=LEVEL_STYLE[level])
        line.append(spark_label, style="dim")
        line.append(sparkline(self.history, spark_w), style="#4fb3ff")
        line.append("\n")
        line.append_text(self._legend(report, width))
        return line

    def _legend(self, report: ContextReport | None, width: int) -> Text:
        legend = Text()
        if report is None:
            legend.append("no context built yet", style="dim")
            return legend
        tokens = slice_tokens(report)
        for name in SEGMENTS:
            legend.append(GLYPH[name], style=STYLE[name])
            legend.append(f"{SHORT[name]} {human_tokens(tokens[name])} ")
        if report.red_flags:  # before the window and step: a narrow terminal cuts those first
            n = len(report.red_flags)
            legend.append(f"⚑ {n} red flag{'' if n == 1 else 's'} ", style="bold red")
        legend.append(f"/{human_tokens(report.window)} · step {report.step}", style="dim")
        if self.relief:
            legend.append(f"  {self.relief}", style="#4fb3ff")
        legend.truncate(width)
        return legend
