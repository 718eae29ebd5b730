"""`ctxagent memory list/search/add/stats` and the MCP server never put raw escapes on a terminal.

A memory record can hold anything a repository or a model put there — a shipped memory.db, a
store_memory of text read from a hostile file. Printed raw, `\\x1b]0;…\\x07` retitles the terminal,
`\\x1b]52;c;…\\x07` writes the clipboard, `\\x1b[2J` clears the screen, `\\x9b` is a CSI on some
terminals. Text output is stripped; JSON output escapes them (and still round-trips).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from ctxagent.context.memory import MemoryStore

BIN = Path(sys.executable).with_name("ctxagent")
HOSTILE = "Use PostgreSQL \x1b]0;pwned\x07\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x9b31m 数据库 \x07done"
CONTROLS = ("\x1b", "\x07", "\x9b")


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    with MemoryStore.open_project(root) as store:
        store.add(HOSTILE, "decision", session="s", turn=1)
        store.add("note with a type \x1b[31m", "note", session="s", turn=1)
    return root


def _run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN), "memory", "--project", str(project), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args", [("list",), ("search", "PostgreSQL"), ("stats",), ("add", "more \x1b[2J text")])
def test_text_output_has_no_control_characters(project: Path, args: tuple[str, ...]) -> None:
    out = _run(project, *args)
    assert out.returncode == 0, out.stderr
    assert not any(c in out.stdout + out.stderr for c in CONTROLS), repr(out.stdout)
    if args[0] in ("list", "search"):
        assert "Use PostgreSQL" in out.stdout and "数据库" in out.stdout and "done" in out.stdout


@pytest.mark.parametrize("args", [("list", "--json"), ("search", "PostgreSQL", "--json")])
def test_json_output_escapes_them_and_round_trips(project: Path, args: tuple[str, ...]) -> None:
    out = _run(project, *args)
    assert out.returncode == 0, out.stderr
    assert not any(c in out.stdout for c in CONTROLS), repr(out.stdout)
    records = json.loads(out.stdout)
    assert HOSTILE in [r["content"] for r in records]  # nothing lost


def test_mcp_server_text_is_stripped(project: Path) -> None:
    """`ctxagent mcp` as a real stdio subprocess, driven by the SDK's client."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "ctxagent.tui.cli", "mcp", "--project", str(project)],
                                   env={**os.environ}, cwd=str(project))

    async def run() -> str:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("search_memory", {"query": "PostgreSQL"})
            return "".join(getattr(c, "text", "") for c in result.content)

    text = anyio.run(run)
    assert "Use PostgreSQL" in text and "数据库" in text and not any(c in text for c in CONTROLS), repr(text)
