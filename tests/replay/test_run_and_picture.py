"""The replay per session (compaction marks, the default window) and the picture's drawing."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from ctxagent.tui.lab.replay import figure
from ctxagent.tui.lab.replay.projects import SessionFile
from ctxagent.tui.lab.replay.run import Options, default_window, main_model, replay_sessions
from ctxagent.tui.lab.replay.sessions import read_session

from .conftest import BENCH, LONG, needs_bench


def calls_before_boundary(path: Path) -> list[int]:
    """How many model calls (API responses) came before each of the transcript's own compactions."""
    seen: set[str] = set()
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec.get("isSidechain"):
            continue
        if rec.get("type") == "system" and rec.get("subtype") == "compact_boundary":
            out.append(len(seen))
        msg = rec.get("message") if rec.get("type") == "assistant" else None
        if isinstance(msg, dict) and msg.get("model") != "<synthetic>":
            seen.add(str(msg.get("id")))
    return out


@needs_bench
def test_compactions_are_marked_where_they_happened() -> None:
    path = BENCH / f"{LONG[0]}.jsonl"
    session = read_session(SessionFile(path, "p", LONG[0]))
    replay = replay_sessions([session], Options(window=60_000, strategies=["ctxagent"], main=main_model([session.traj])))
    r = replay.results[0]
    assert r.source_compactions == calls_before_boundary(path)
    assert len(r.compactions) == r.totals.strategies["ctxagent"].compactions > 0  # the bench's own count
    assert r.compactions == sorted(set(r.compactions)) and r.compactions[-1] < r.totals.calls


@needs_bench
def test_the_default_window_is_the_one_the_sessions_ran_with() -> None:
    session = read_session(SessionFile(BENCH / f"{LONG[1]}.jsonl", "p", LONG[1]))
    window, why = default_window([session.traj])
    largest = max(c.reported or 0 for c in session.traj.calls)
    assert largest <= 200_000 and window == 200_000 and "Claude Code" in why
    for call in session.traj.calls[:1]:  # a prompt over 200k: the 1M option was on, the registry's window
        call.reported = 250_000
    window, why = default_window([session.traj])
    assert window > 200_000 and "registry" in why


def _panel(n: int, window_marks: tuple[list[int], list[int]] = ([], [])) -> figure.Panel:
    return figure.Panel(f"session {n}", [1000.0 * i for i in range(1, n + 1)], [800.0 * i for i in range(1, n + 1)],
                        *window_marks)


def test_the_svg_marks_both_kinds_of_compaction_and_the_window() -> None:
    shapes, w, h = figure.layout([_panel(50, ([20], [30, 40]))], 60_000, "ctxagent", "t", "f")
    root = ET.fromstring(figure.svg(shapes, w, h))
    lines = list(root.iter("{http://www.w3.org/2000/svg}polyline"))
    vertical = [ln for ln in lines if ln.get("stroke-dasharray") == "3,3" and len(ln.get("points", "").split()) == 2
                and ln.get("points", "").split()[0].split(",")[0] == ln.get("points", "").split()[1].split(",")[0]]
    colors = [ln.get("stroke") for ln in vertical]
    assert colors.count(figure.ORIGINAL) == 1 + 1 and colors.count(figure.OURS) == 2 + 1  # + the legend's mark
    assert any(ln.get("stroke") == figure.WINDOW and ln.get("stroke-dasharray") == "6,4" for ln in lines)


def test_a_window_far_above_the_curves_is_named_not_drawn() -> None:
    shapes, _, _ = figure.layout([_panel(50)], 1_000_000, "ctxagent", "t", "f")
    assert any("above the chart" in s.text for s in shapes)
    assert not any(s.kind == "line" and s.color == figure.WINDOW and len(s.points) == 2 and s.points[0][1] == s.points[1][1]
                   and s.points[1][0] - s.points[0][0] > 100 for s in shapes)


def test_ticks_are_round_and_calls_whole() -> None:
    assert figure.nice_ticks(183_000) == [0, 50_000, 100_000, 150_000, 200_000]
    for n in (1, 2, 4, 12, 139, 1000):
        calls = figure.call_ticks(n)
        assert calls[0] == 1 and calls == sorted(set(calls)) and calls[-1] <= n and len(calls) <= 12


def test_a_picture_of_many_sessions_draws_the_longest_and_says_so(tmp_path: Path) -> None:
    panels = [_panel(n) for n in (40, 30, 20, 10, 9, 8, 7, 6, 5, 4)]
    out = tmp_path / "p.svg"
    figure.write(out, panels, 200_000, "ctxagent", "title", "footer")
    text = out.read_text(encoding="utf-8")
    assert "session 40<" in text and "session 6<" in text and "session 5<" not in text
    assert f"{len(panels) - figure.MAX_PANELS} shorter sessions not drawn" in text
    with pytest.raises(ValueError, match=".svg or .png"):
        figure.write(tmp_path / "p.gif", panels, 200_000, "ctxagent", "t", "f")


def test_the_png_is_the_same_picture(tmp_path: Path) -> None:
    from PIL import Image

    out = tmp_path / "p.png"
    figure.write(out, [_panel(30, ([10], [20]))], 40_000, "ctxagent", "title 标题", "footer")
    with Image.open(out) as img:
        assert img.size[0] == figure.WIDTH * 2
        rgb = img.convert("RGB")
        colors = {rgb.getpixel((x, y)) for x in range(0, img.size[0], 7) for y in range(0, img.size[1], 7)}
    hexes = {"#{:02x}{:02x}{:02x}".format(*c) for c in colors}
    assert figure.ORIGINAL in hexes and figure.OURS in hexes and figure.WINDOW in hexes
