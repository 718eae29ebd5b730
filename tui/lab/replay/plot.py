"""The picture: context tokens per call, the original run against the replayed strategy, compactions marked.

`panels` turns a replay into one panel per session (the longest first); `terminal` draws the
longest in the terminal with plotext; figure.py writes them all to an SVG or PNG file.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

from ctxagent.tui.lab.replay import figure
from ctxagent.tui.lab.replay.run import Replay


def panels(replay: Replay) -> list[figure.Panel]:
    lead = replay.options.strategies[0]
    out = []
    for r in sorted(replay.results, key=lambda r: -r.totals.calls):
        f = r.session.file
        when = dt.datetime.fromtimestamp(r.session.started).strftime("%Y-%m-%d %H:%M") if r.session.started else ""
        kind = f"subagent of {f.parent[:8]}" if f.parent else "session"
        title = f"{f.session[:36]} · {kind} · {when} · {r.totals.calls} call{'s' if r.totals.calls != 1 else ''}"
        out.append(figure.Panel(title, list(r.totals.reference.tokens), list(r.totals.strategies[lead].tokens),
                                r.source_compactions, r.compactions if lead == "ctxagent" else []))
    return out


def write_plot(path: Path, replay: Replay) -> None:
    lead = replay.options.strategies[0]
    figure.write(path, panels(replay), replay.options.window, lead,
                 f"Context tokens per call: your Claude Code sessions vs {lead}",
                 "ctxagent replay: read locally from your transcripts; nothing was sent anywhere.")


def terminal(replay: Replay, color: bool, width: int | None = None) -> str:
    """The longest session as a terminal plot (plotext), colours only when asked."""
    import plotext as plt

    shown = panels(replay)[0]
    lead = replay.options.strategies[0]
    window = replay.options.window
    cols = width or shutil.get_terminal_size((100, 24)).columns
    plt.clear_figure()
    plt.plotsize(max(60, min(cols, 140)), 22)
    plt.theme("pro" if color else "clear")
    n = max(len(shown.original), len(shown.ours))
    xs = list(range(1, n + 1))
    # without colours the two curves differ by their marks
    plt.plot(xs[:len(shown.original)], shown.original, label="original", color="blue", marker="braille")
    plt.plot(xs[:len(shown.ours)], shown.ours, label=lead, color="orange", marker="braille" if color else "•")
    peak = max([*shown.original, *shown.ours, 1.0])
    if window <= peak * 1.6:
        plt.hline(window, "red")
    for i in shown.original_compactions:
        plt.vline(i + 1, "blue")
    for i in shown.our_compactions:
        plt.vline(i + 1, "orange")
    ticks = figure.nice_ticks(max(peak, window) if window <= peak * 1.6 else peak)
    plt.yticks(ticks, [figure.short(t) for t in ticks])
    plt.ylim(0, ticks[-1])
    calls = figure.call_ticks(n)
    plt.xticks(calls, [str(c) for c in calls])
    head = shown.title.split(" · ")
    plt.title(f"{head[0][:8]} · {head[-1]} · context tokens per call")
    plt.xlabel("call")
    text = str(plt.build())
    plt.clear_figure()
    curves = (f"original: what Claude Code sent (blue) · {lead}: replayed (orange)" if color else
              f"original: what Claude Code sent (⢕) · {lead}: replayed (•)")
    marks = [curves, f"W = {window:,}" + ((" (the red line)" if color else " (the horizontal line)") if window <= peak * 1.6
                                         else " (above the chart)")]
    if shown.original_compactions:
        marks.append("the original compacted before call " + _calls(shown.original_compactions))
    if shown.our_compactions:
        marks.append(f"{lead} compacted at call " + _calls(shown.our_compactions))
    if len(replay.results) > 1:
        marks.append(f"the longest of {len(replay.results)} transcripts; --plot FILE draws them all")
    return (text if color else str(plt.uncolorize(text))).rstrip() + "\n" + "\n".join(f"  {m}" for m in marks)


def _calls(indexes: list[int]) -> str:
    """Call numbers (from 1) as a short list: `87, 107, 108`, or the first ones and a count."""
    numbers = [str(i + 1) for i in indexes]
    return ", ".join(numbers) if len(numbers) <= 8 else ", ".join(numbers[:8]) + f" … ({len(numbers)} in all)"
