"""scope: user — a preference stored once is recalled in every project's warm block."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ctxagent.context.memory.recall import MemoryRecall
from ctxagent.context.memory.store import MemoryStore
from ctxagent.context.tokens import get_counter
from ctxagent.tools.base import ToolContext
from ctxagent.tools.memory_tools import memory_tools

BIN = Path(sys.executable).with_name("ctxagent")


def test_user_scope_crosses_projects(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    store_tool = next(t for t in memory_tools() if t.name == "store_memory")
    res = store_tool.run({"content": "Always use type hints in Python code. 始终使用类型注解。", "type": "constraint", "scope": "user"}, ToolContext(root=a))
    assert not res.is_error, res.content
    # project a's own store did not get it; the user store did
    assert not MemoryStore.open_project(a).list(type="constraint")
    assert MemoryStore.open_user().list(type="constraint")
    # project b, a different repository, recalls it in its warm block
    proj_b = MemoryStore.open_project(b)
    proj_b.add("Use PostgreSQL.", "decision", session="s", turn=1)
    block = MemoryRecall(proj_b, "s", user_store=MemoryStore.open_user()).warm_block("database choice", [], 2, 2000, get_counter("o200k_base"))
    assert "Always use type hints" in block and "PostgreSQL" in block
    assert block.index("type hints") < block.index("PostgreSQL")  # preferences first
    # the CLI sees the same user store
    out = subprocess.run([str(BIN), "memory", "--user", "list"], capture_output=True, text=True, cwd=b)
    assert out.returncode == 0 and "type hints" in out.stdout
