"""The app with MCP servers: the status bar's MCP item, a failed server's line, and /mcp."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ctxagent.agent.factory import create_agent
from ctxagent.tui.app.app import CtxApp
from tui_helpers import make_session, ready, screen_text, send, wait_until

pytestmark = pytest.mark.anyio
SERVER = str(Path(__file__).parents[1] / "mcp" / "fixture_server.py")


async def test_status_bar_and_mcp_screen(tmp_path: Path) -> None:
    servers = {"fx": {"command": sys.executable, "args": [SERVER, "stdio"], "sandbox": False},
               "dead": {"command": sys.executable, "args": [SERVER, "silent"], "sandbox": False, "startup_timeout": 1.0}}
    session = make_session(tmp_path, [{"text": "hi"}], mcp_servers=servers)
    app = CtxApp(session, create_agent)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await ready(pilot, app)
        await wait_until(pilot, lambda: "MCP 1/2 ✗ dead" in screen_text(app), timeout=30)
        assert "MCP server dead failed: no answer to initialize" in screen_text(app)
        await send(pilot, app, "/mcp")
        text = screen_text(app)
        assert "fx" in text and "ready" in text and "mcp__fx__reverse" in text and "failed" in text
        await pilot.press("escape")
        screen.agent.parts.mcp.close()
