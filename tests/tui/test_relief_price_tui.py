"""The price of each relief (issue 22), as the user meets it: a session with a clear and a compaction shows
each cut's prompt-cache effect — tokens re-written, cost before → after — in /context, in `ctxagent report`
and as a small label on the gauge. The real Agent, tools and session log, with the in-process scripted model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ctxagent.agent.factory import create_agent
from ctxagent.tui.app.app import CtxApp
from ctxagent.tui.app.screens.context_screen import ContextScreen
from tui_helpers import make_session, ready, screen_text, send

pytestmark = pytest.mark.anyio

ROWS = "\n".join(f"row {i}: measurement {i * 13} 测量值 ok" for i in range(130))


def _read(name: str) -> dict[str, object]:
    return {"text": f"Reading {name}.", "tool_calls": [{"name": "read_file", "arguments": {"path": name}}]}


async def test_context_report_and_gauge_show_the_price_of_a_clear_and_a_compaction(tmp_path: Path) -> None:
    names = ("a.txt", "b.txt", "c.txt", "d.txt", "e.txt")
    script = [x for n in names for x in (_read(n), {"text": f"Read {n}."})]
    script += [{"text": "After the compaction."}, {"text": "Still here."}]
    session = make_session(tmp_path, script, window=12_000)
    for name in names:
        (session.root / name).write_text(ROWS, encoding="utf-8")
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(120, 80)) as pilot:
        screen = await ready(pilot, app)
        for name in names:  # the tools slice fills: older results are cut
            await send(pilot, app, f"read {name}")
        await send(pilot, app, "/compact")
        await send(pilot, app, "go on")  # the first request after the compaction: its price is logged
        await send(pilot, app, "and then?")
        logged = [e.context_report.report.get("relief_price") for e in session.log.events if e.kind == "context_report"]
        kinds = {p["kind"] for p in logged if p}
        assert kinds == {"clear", "compaction"}, logged
        assert all(p["rewritten"] >= 0 and p["cost_before"] > 0 for p in logged if p)
        # the gauge keeps the newest relief's label
        assert screen.gauge.relief.startswith("⟳ compaction @") and "/call" in screen.gauge.render().plain
        await send(pilot, app, "/context")
        assert isinstance(app.screen, ContextScreen)
        text = screen_text(app)
        assert "Prompt-cache price of each cut" in text
        assert "clear:" in text and "compaction:" in text and "tokens re-written to the cache" in text
        assert "input tokens' worth" in text and "→" in text
        await pilot.press("escape")
    out = subprocess.run([sys.executable, "-m", "ctxagent.tui.cli", "report", session.id], cwd=session.root,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "prompt-cache effect of each relief" in out.stdout
    lines = [ln for ln in out.stdout.splitlines() if "tokens re-written to the cache" in ln]
    assert any("clear:" in ln for ln in lines) and any("compaction:" in ln for ln in lines)
    assert all("fewer sent per call" in ln and "next " in ln for ln in lines)
