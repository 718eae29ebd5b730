"""The picture as a file: context tokens per call, the original run against the replayed strategy.

One panel per session (the longest first, at most `MAX_PANELS`): both curves, the window as a
dashed line, the original run's own compactions and the strategy's as vertical marks. The layout
is computed once as a few shapes (`Shape`), then written as SVG (no dependency) or drawn as PNG
with Pillow (the `plot` extra) — the same picture either way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

MAX_PANELS = 8
WIDTH, PANEL_H, SHORT_PANEL_H, SHORT, TOP, GAP = 1000, 300, 190, 20, 112, 28  # sessions of < SHORT calls: lower panels
CHAR_W = 6.6  # the average width of a 12-px character, to lay out the legend
LEFT, RIGHT = 78, 24
ORIGINAL, OURS, WINDOW, GRID, INK, MUTED = "#3b6fb6", "#e07b00", "#c0392b", "#e6e6e6", "#222222", "#666666"


@dataclass
class Panel:
    title: str
    original: list[float]
    ours: list[float]
    original_compactions: list[int] = field(default_factory=list)  # call indexes from 0
    our_compactions: list[int] = field(default_factory=list)


@dataclass
class Shape:
    kind: str  # "line" (points) | "dots" (points) | "text" | "rect"
    points: list[tuple[float, float]] = field(default_factory=list)
    color: str = INK
    width: float = 1.0
    dash: tuple[int, int] | None = None
    text: str = ""
    size: int = 12
    anchor: str = "start"  # "start" | "middle" | "end"
    bold: bool = False
    fill: str | None = None


def short(n: float) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:g}M"
    if n >= 1000:
        return f"{n / 1000:g}k"
    return f"{n:g}"


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least `top`."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(math.ceil(top / step)) + 1)]


def layout(panels: Sequence[Panel], window: int, lead: str, title: str, footer: str) -> tuple[list[Shape], int, int]:
    shown = list(panels)[:MAX_PANELS]
    heights = [PANEL_H if max(len(p.original), len(p.ours)) >= SHORT else SHORT_PANEL_H for p in shown]
    height = TOP + sum(h + GAP for h in heights) + 40
    s: list[Shape] = [Shape("rect", [(0, 0), (WIDTH, height)], color="#ffffff", fill="#ffffff"),
                      Shape("text", [(LEFT, 30)], text=title, size=18, bold=True)]
    legend = [("line", ORIGINAL, None, "original run (what Claude Code reported)"), ("line", OURS, None, f"{lead} (replayed)"),
              ("line", WINDOW, (6, 4), f"window W = {window:,}"), ("mark", ORIGINAL, (3, 3), "original compacted"),
              ("mark", OURS, (3, 3), f"{lead} compacted")]
    x, y = float(LEFT), 56.0
    for kind, color, dash, label in legend:
        wide = 32 + CHAR_W * len(label) + 24
        if x + wide > WIDTH - RIGHT:  # the next row
            x, y = float(LEFT), y + 24
        if kind == "line":
            s.append(Shape("line", [(x, y), (x + 26, y)], color=color, width=3, dash=dash))
        else:
            s.append(Shape("line", [(x + 13, y - 10), (x + 13, y + 10)], color=color, width=2, dash=dash))
        s.append(Shape("text", [(x + 32, y + 4)], text=label, size=12, color=INK))
        x += wide
    y0 = float(TOP)
    for p, h in zip(shown, heights, strict=True):
        s += _panel(p, window, y0, h)
        y0 += h + GAP
    if len(panels) > len(shown):
        footer = f"{footer}  ({len(panels) - len(shown)} shorter sessions not drawn: see --out)"
    s.append(Shape("text", [(LEFT, height - 14)], text=footer, size=11, color=MUTED))
    return s, WIDTH, height


def _panel(p: Panel, window: int, y0: float, h: int) -> list[Shape]:
    x0, x1 = LEFT, WIDTH - RIGHT
    top, bottom = y0 + 26, y0 + h - 30
    peak = max([*p.original, *p.ours, 1.0])
    show_window = window <= peak * 1.6  # a window far above the curves would flatten them: named, not drawn
    ticks = nice_ticks(max(peak, window) if show_window else peak)
    ymax = ticks[-1]
    n = max(len(p.original), len(p.ours), 1)

    def px(i: float) -> float:
        return x0 + (x1 - x0) * (i / (n - 1)) if n > 1 else (x0 + x1) / 2

    def py(v: float) -> float:
        return bottom - (bottom - top) * (v / ymax)

    out = [Shape("text", [(x0, y0 + 12)], text=p.title, size=13, bold=True)]
    for t in (ticks if h >= PANEL_H else ticks[::2] if len(ticks) > 4 else ticks):
        out.append(Shape("line", [(x0, py(t)), (x1, py(t))], color=GRID))
        out.append(Shape("text", [(x0 - 8, py(t) + 4)], text=short(t), size=11, color=MUTED, anchor="end"))
    for call in call_ticks(n):
        at = px(call - 1)
        out.append(Shape("line", [(at, bottom), (at, bottom + 4)], color=MUTED))
        out.append(Shape("text", [(at, bottom + 17)], text=str(call), size=11, color=MUTED, anchor="middle"))
    out.append(Shape("text", [((x0 + x1) / 2, bottom + 30)], text="call", size=11, color=MUTED, anchor="middle"))
    out.append(Shape("line", [(x0, top), (x0, bottom), (x1, bottom)], color=MUTED))
    if show_window:
        out.append(Shape("line", [(x0, py(window)), (x1, py(window))], color=WINDOW, width=1.5, dash=(6, 4)))
    else:
        out.append(Shape("text", [(x1, top - 6)], text=f"W = {window:,} (above the chart)", size=11, color=WINDOW,
                         anchor="end"))
    for idx, color in ((p.original_compactions, ORIGINAL), (p.our_compactions, OURS)):
        for i in idx:
            out.append(Shape("line", [(px(i), top), (px(i), bottom)], color=color, width=1.5, dash=(3, 3)))
    for series, color in ((p.original, ORIGINAL), (p.ours, OURS)):
        points = [(px(i), py(v)) for i, v in enumerate(series)]
        if len(points) > 1:
            out.append(Shape("line", points, color=color, width=2.2))
        if points and len(points) < SHORT:  # a few calls: each one marked
            out.append(Shape("dots", points, color=color, width=3.5))
    return out


def call_ticks(n: int) -> list[int]:
    """Whole call numbers from 1 to n, about eight of them."""
    if n <= 1:
        return [1]
    step = max(1, int(nice_ticks(n, 8)[1]))
    return [1] + [c for c in range(step, n + 1, step) if c > 1]


# -- writing ------------------------------------------------------------------------------------------
def svg(shapes: Sequence[Shape], width: int, height: int) -> str:
    body = []
    for sh in shapes:
        if sh.kind == "rect":
            (x, y), (w, h) = sh.points
            body.append(f'<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="{sh.fill or "none"}"/>')
        elif sh.kind == "dots":
            body += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{sh.width}" fill="{sh.color}"/>' for x, y in sh.points]
        elif sh.kind == "line":
            pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in sh.points)
            dash = f' stroke-dasharray="{sh.dash[0]},{sh.dash[1]}"' if sh.dash else ""
            body.append(f'<polyline points="{pts}" fill="none" stroke="{sh.color}" stroke-width="{sh.width}"'
                        f' stroke-linejoin="round"{dash}/>')
        else:
            (x, y), = sh.points
            weight = ' font-weight="bold"' if sh.bold else ""
            body.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{sh.size}" fill="{sh.color}" '
                        f'text-anchor="{sh.anchor}"{weight}>{escape(sh.text)}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            'font-family="DejaVu Sans, Helvetica, Arial, sans-serif">\n' + "\n".join(body) + "\n</svg>\n")


def png(shapes: Sequence[Shape], width: int, height: int, path: Path, scale: int = 2) -> None:
    """Draw with Pillow (the `plot` extra): raises ImportError when it is not installed."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (width * scale, height * scale), "#ffffff")
    draw = ImageDraw.Draw(img)
    fonts: dict[int, object] = {}
    for sh in shapes:
        pts = [(x * scale, y * scale) for x, y in sh.points]
        if sh.kind == "rect":
            draw.rectangle([pts[0], (pts[0][0] + pts[1][0], pts[0][1] + pts[1][1])], fill=sh.fill)
        elif sh.kind == "dots":
            r = sh.width * scale
            for x, y in pts:
                draw.ellipse([(x - r, y - r), (x + r, y + r)], fill=sh.color)
        elif sh.kind == "line":
            w = max(1, round(sh.width * scale))
            for seg in (_dashed(pts, (sh.dash[0] * scale, sh.dash[1] * scale)) if sh.dash else [pts]):
                draw.line(seg, fill=sh.color, width=w, joint="curve")
        else:
            size = sh.size * scale
            font = fonts.get(size) or fonts.setdefault(size, ImageFont.load_default(size=size))
            anchor = {"start": "ls", "middle": "ms", "end": "rs"}[sh.anchor]
            draw.text(pts[0], sh.text, fill=sh.color, font=font, anchor=anchor,  # type: ignore[arg-type]  # Pillow's font union
                      stroke_width=1 if sh.bold else 0, stroke_fill=sh.color)
    img.save(path, format="PNG")


def _dashed(pts: list[tuple[float, float]], dash: tuple[float, float]) -> list[list[tuple[float, float]]]:
    """A polyline cut into dashes (Pillow draws no dashed lines)."""
    on, off = dash
    out: list[list[tuple[float, float]]] = []
    for (xa, ya), (xb, yb) in zip(pts, pts[1:], strict=False):
        length = math.hypot(xb - xa, yb - ya)
        t = 0.0
        while t < length:
            e = min(t + on, length)
            out.append([(xa + (xb - xa) * t / length, ya + (yb - ya) * t / length),
                        (xa + (xb - xa) * e / length, ya + (yb - ya) * e / length)])
            t = e + off
    return out


def write(path: Path, panels: Sequence[Panel], window: int, lead: str, title: str, footer: str) -> None:
    """`path` ending in .svg or .png; anything else raises ValueError."""
    shapes, width, height = layout(panels, window, lead, title, footer)
    suffix = path.suffix.lower()
    if suffix == ".svg":
        path.write_text(svg(shapes, width, height), encoding="utf-8")
    elif suffix == ".png":
        png(shapes, width, height, path)
    else:
        raise ValueError(f"--plot writes .svg or .png, not {path.name!r}")
