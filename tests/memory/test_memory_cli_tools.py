"""`ctxagent memory …` as a real subprocess, and the memory tools through the ToolRegistry."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ctxagent.context.memory import MemoryStore
from ctxagent.tools.contract import ToolContext, ToolRegistry, ToolServices
from ctxagent.tools.memory_tools import memory_tools


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ctxagent.tui.cli", "memory", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def test_memory_cli_add_search_list_forget_stats(tmp_path: Path) -> None:
    r = _cli(tmp_path, "add", "Never modify config files", "--type", "constraint")
    assert r.returncode == 0, r.stderr
    assert "added 1: [constraint t0] Never modify config files" in r.stdout
    assert _cli(tmp_path, "add", "用户登录使用 JWT", "--type", "decision").returncode == 0
    r = _cli(tmp_path, "search", "登录逻辑", "--json")
    found = json.loads(r.stdout)
    assert [x["content"] for x in found] == ["用户登录使用 JWT"] and found[0]["type"] == "decision"
    r = _cli(tmp_path, "search", "settings", "--type", "constraint")
    assert "Never modify config files" in r.stdout
    r = _cli(tmp_path, "list", "--type", "decision", "--json")
    assert len(json.loads(r.stdout)) == 1
    other = tmp_path / "elsewhere"
    other.mkdir()
    r = subprocess.run([sys.executable, "-m", "ctxagent.tui.cli", "memory", "--project", str(tmp_path), "stats", "--json"],
                       cwd=other, capture_output=True, text=True, timeout=60)
    st = json.loads(r.stdout)
    assert st["total"] == 2 and st["pinned"] == 1 and st["by_type"] == {"constraint": 1, "decision": 1}
    assert _cli(tmp_path, "forget", "1").stdout.strip() == "forgot 1"
    r = _cli(tmp_path, "forget", "1")
    assert r.returncode == 1 and "no record 1" in r.stderr
    assert "1 records" in _cli(tmp_path, "stats").stdout
    r = _cli(tmp_path, "add", "x", "--type", "opinion")
    assert r.returncode == 2  # argparse refuses an unknown type


def test_memory_tools_via_registry(tmp_path: Path) -> None:
    reg = ToolRegistry(memory_tools())
    assert {"search_memory", "store_memory", "summarize_context"} <= set(reg.names())
    ctx = ToolContext(root=tmp_path, services=ToolServices(session="s9", turn=4))
    r = reg.run("store_memory", {"content": "Use MySQL for the database.", "type": "decision"}, ctx)
    assert not r.is_error and r.content.startswith("stored record 1")
    r = reg.run("store_memory", {"content": "Use PostgreSQL for the database now.", "type": "decision", "tags": ["db"]}, ctx)
    assert "supersedes 1" in r.content
    r = reg.run("search_memory", {"query": "database"}, ctx)
    assert "PostgreSQL" in r.content and "MySQL for" not in r.content and r.meta["records"] == [2]
    r = reg.run("search_memory", {"query": "database", "include_superseded": True, "limit": 5}, ctx)
    assert "superseded by 2" in r.content
    r = reg.run("search_memory", {"query": "database", "type": "opinion"}, ctx)
    assert r.is_error  # schema enum
    r = reg.run("store_memory", {"content": "   ", "type": "note"}, ctx)
    assert r.is_error and "needs content" in r.content
    # the project DB on disk is where the records went (no services.memory given)
    store = MemoryStore.open_project(tmp_path)
    assert store.get(2).session == "s9" and store.get(2).turn == 4 and store.get(2).tags == ["db"]


def test_memory_tools_use_injected_store_and_summarizer(tmp_path: Path) -> None:
    store = MemoryStore.open(":memory:")
    calls: list[str] = []

    def fake_model(prompt: str) -> str:
        calls.append(prompt)
        return "Decisions:\n- use Redis\nConstraints:\n- none\nChanges:\n- none\nOpen tasks:\n- none"

    ctx = ToolContext(root=tmp_path, services=ToolServices(memory=store, summarize=fake_model))
    reg = ToolRegistry(memory_tools())
    reg.run("store_memory", {"content": "remember the cache TTL is 60s", "type": "note"}, ctx)
    assert store.stats()["total"] == 1 and not (tmp_path / ".ctxagent").exists()
    r = reg.run("summarize_context", {"text": "long discussion … we use Redis", "max_tokens": 100}, ctx)
    assert r.meta["method"] == "model" and "use Redis" in r.content and "Stay under 100 tokens" in calls[0]
    ctx.services.summarize = lambda p: "garbage without sections"
    r = reg.run("summarize_context", {"text": "We decided to use Redis. 不要修改配置文件。"}, ctx)
    assert r.meta["method"] == "extractive" and "use Redis" in r.content and "不要修改配置文件" in r.content
