"""What the memory views say (issue 24 item 9): `memory list` and `stats` tell current records from
superseded and retired ones, and search_memory refuses a bad layer, type or limit in words — for an
MCP client and for the model alike."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from ctxagent.context.errors import MemoryStoreError
from ctxagent.context.memory import MemoryStore
from ctxagent.tools.memory_tools import SEARCH_LIMIT_MAX, search_memory
from ctxagent.tui.cli.mcp_server import build_server


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ctxagent.tui.cli", "memory", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def _project(tmp_path: Path) -> Path:
    with MemoryStore.open_project(tmp_path) as store:
        store.add("Never modify the config files.", "constraint", session="s", turn=1)
        store.add("Never push to main.", "constraint", session="s", turn=3)  # a rewind takes turn 3 back
        old = store.add("Use SQLite for the cache.", "decision", session="s", turn=1)
        new = store.add("Use Redis for the cache instead of SQLite.", "decision", session="s", turn=2)
        assert store.get(old).superseded_by == new  # type: ignore[union-attr]
        assert store.retire_after("s", 3) == 1
    return tmp_path


def test_memory_list_says_why_a_record_is_not_current(tmp_path: Path) -> None:
    out = _cli(_project(tmp_path), "list")
    assert out.returncode == 0, out.stderr
    assert "None" not in out.stdout
    retired = next(ln for ln in out.stdout.splitlines() if "Never push to main" in ln)
    assert "retired" in retired and "superseded" not in retired
    replaced = next(ln for ln in out.stdout.splitlines() if "Use SQLite for the cache" in ln)
    assert "(superseded by " in replaced and "retired" not in replaced
    current = next(ln for ln in out.stdout.splitlines() if "Never modify the config files" in ln)
    assert "superseded" not in current and "retired" not in current and "by the user, binding" in current


def test_memory_stats_count_only_current_pinned_constraints(tmp_path: Path) -> None:
    out = _cli(_project(tmp_path), "stats", "--json")
    assert out.returncode == 0, out.stderr
    st = json.loads(out.stdout)
    assert st["pinned"] == 1 and st["retired"] == 1 and st["superseded"] == 1
    text = _cli(tmp_path, "stats").stdout
    assert "1 retired by a rewind, 1 pinned constraints" in text


BAD_ARGUMENTS = [
    ({"layer": "hot"}, "unknown layer 'hot'"),
    ({"type": "bogus"}, "unknown record type 'bogus'"),
    ({"limit": -5}, "limit must be a whole number from 1 to"),
    ({"limit": 0}, "limit must be a whole number from 1 to"),
    ({"limit": SEARCH_LIMIT_MAX + 1}, "limit must be a whole number from 1 to"),
]


@pytest.mark.parametrize(("bad", "said"), BAD_ARGUMENTS)
def test_mcp_search_memory_refuses_bad_arguments_in_words(tmp_path: Path, bad: dict[str, Any], said: str) -> None:
    with MemoryStore.open_project(tmp_path) as store:
        store.add("Use Redis for the cache.", "decision", session="s", turn=1)
    server = build_server(tmp_path)

    async def call() -> str:
        result = await server.call_tool("search_memory", {"query": "cache", **bad})
        return json.dumps(result, default=str)

    with pytest.raises(Exception) as caught:
        anyio.run(call)
    assert said in str(caught.value)
    assert "Use Redis" in anyio.run(lambda: _ok(server))  # good arguments still answer


async def _ok(server: Any) -> str:
    return json.dumps(await server.call_tool("search_memory", {"query": "cache", "layer": "warm", "type": "decision",
                                                               "limit": 3}), default=str)


@pytest.mark.parametrize(("bad", "said"), BAD_ARGUMENTS)
def test_search_memory_refuses_bad_arguments_for_every_caller(tmp_path: Path, bad: dict[str, Any], said: str) -> None:
    with MemoryStore.open(tmp_path / "m.db") as store, pytest.raises(MemoryStoreError, match=said.split("'")[0]):
        search_memory(store, "cache", **bad)
