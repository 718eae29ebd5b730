"""`ctxagent mcp --project DIR` as a real stdio subprocess, driven by the mcp SDK's own client."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import anyio
from ctxagent.context.memory import MemoryStore
from ctxagent.context.spill import SpillStore
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def _text(result: object) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)  # type: ignore[attr-defined]


def test_mcp_server_round_trip(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    handle = SpillStore.for_root(project).put("\n".join(f"line {i}: value {i * i}" for i in range(500)))
    agent_store = MemoryStore.open_project(project)
    agent_store.add("Use PostgreSQL for the database.", "decision", session="agent", turn=2)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ctxagent.tui.cli", "mcp", "--project", str(project)],
        env={**os.environ, "CTXAGENT_HOME": os.environ["CTXAGENT_HOME"]}, cwd=str(tmp_path),
    )
    stop = threading.Event()
    agent_ids: list[int] = []

    def agent_writes() -> None:  # the agent keeps writing the same DB while the server serves
        i = 0
        while not stop.is_set() and i < 200:
            agent_ids.append(agent_store.add(f"agent note number {i} while serving", "note", session="agent", turn=i, merge=False))
            i += 1

    async def session_run() -> dict[str, str]:
        out: dict[str, str] = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            out["tools"] = ",".join(sorted(t.name for t in tools.tools))
            worker = threading.Thread(target=agent_writes)
            worker.start()
            try:
                for i in range(20):
                    r = await session.call_tool("store_memory", {"content": f"mcp client fact {i} about caching", "type": "note"})
                    assert not r.is_error, _text(r)
                r = await session.call_tool("store_memory", {"content": "不要修改配置文件", "type": "constraint"})
                out["store"] = _text(r)
            finally:
                stop.set()
                worker.join()
            out["search"] = _text(await session.call_tool("search_memory", {"query": "which database", "type": "decision"}))
            out["zh"] = _text(await session.call_tool("search_memory", {"query": "config settings"}))
            out["summary"] = _text(await session.call_tool(
                "summarize_context", {"text": "We decided to use Redis. Never log passwords. TODO: add a cache test"}))
            out["spill"] = _text(await session.call_tool("read_spill", {"handle": handle, "grep": "value 2401$"}))
            bad = await session.call_tool("store_memory", {"content": "x", "type": "opinion"})
            out["bad"] = f"{bad.is_error}:{_text(bad)}"
            bad_spill = await session.call_tool("read_spill", {"handle": "zz"})
            out["bad_spill"] = f"{bad_spill.is_error}"
        return out

    out = anyio.run(session_run)
    assert out["tools"] == "read_spill,search_memory,store_memory,summarize_context"
    assert "stored record" in out["store"] and "[constraint" in out["store"]
    assert "PostgreSQL" in out["search"]
    assert "不要修改配置文件" in out["zh"]
    assert "Decisions:" in out["summary"] and "Redis" in out["summary"] and "Never log passwords" in out["summary"]
    assert "line 49: value 2401" in out["spill"]
    assert out["bad"].startswith("True") and "unknown record type" in out["bad"]
    assert out["bad_spill"] == "True"
    # nothing lost: every write from both processes is in the database
    check = MemoryStore.open_project(project)
    notes = check.list(type="note")
    assert sum(r.content.startswith("mcp client fact") for r in notes) == 20
    assert {r.id for r in notes if r.session == "agent"} == set(agent_ids)
