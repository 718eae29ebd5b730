from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from ctx_helpers import numbered_lines
from ctxagent.context.errors import ToolError
from ctxagent.context.spill import SpillStore
from ctxagent.context.tokens import HeuristicCounter, get_counter
from ctxagent.tools.contract import ToolContext, ToolRegistry, ToolServices
from ctxagent.tools.spill_tool import READ_SPILL, make_read_spill_tool

C = get_counter("o200k_base")


def test_small_output_is_not_spilled(tmp_path: Path) -> None:
    store = SpillStore(tmp_path / "spill")
    shown, meta = store.maybe_spill("short output\nline 2", C)
    assert shown == "short output\nline 2" and meta is None
    assert not (tmp_path / "spill").exists()


def test_large_output_spills_with_head_tail_and_marker(tmp_path: Path) -> None:
    store = SpillStore.for_root(tmp_path)
    content = numbered_lines(5000)
    shown, meta = store.maybe_spill(content, C, spill_tokens=2000)
    assert meta is not None
    assert meta["lines"] == 5000 and meta["tokens"] == C.count(content)
    handle = meta["handle"]
    digest = hashlib.sha256(content.encode()).hexdigest()
    assert digest.startswith(handle)
    path = tmp_path / ".ctxagent" / "spill" / f"{digest}.txt"
    assert path.read_text() == content  # the original is kept, byte for byte
    assert shown.startswith("00000 output line")
    assert shown.rstrip().endswith(content.splitlines()[-1])
    m = re.search(r"\[… (\d+) lines / (\d+) tokens cut — full output: read_spill handle=([0-9a-f]+)\]", shown)
    assert m and m.group(3) == handle
    assert C.count(shown) < 2000
    # content-addressed: the same content gives the same handle and one file
    again, meta2 = store.maybe_spill(content, C, spill_tokens=2000)
    assert meta2 == meta and again == shown
    assert len(list((tmp_path / ".ctxagent" / "spill").glob("*.txt"))) == 1


def test_single_giant_line_and_chinese(tmp_path: Path) -> None:
    store = SpillStore(tmp_path)
    blob = '{"data": "' + "x" * 200_000 + '"}'
    shown, meta = store.maybe_spill(blob, C)
    assert meta and C.count(shown) < 2000 and "read_spill handle=" in shown
    zh = "\n".join(f"第{i}行：不要修改配置文件，这是测试输出。" for i in range(3000))
    shown, meta = store.maybe_spill(zh, HeuristicCounter())
    assert meta and "第0行" in shown and "第2999行" in shown
    assert store.get(meta["handle"]) == zh


def test_read_pages_and_greps(tmp_path: Path) -> None:
    store = SpillStore(tmp_path)
    content = numbered_lines(1000)
    handle = store.put(content)
    page = store.read(handle, offset=10, limit=5)
    lines = page.splitlines()
    assert lines[0].startswith(f"[spill {handle}: lines 11–15 of 1000]")
    assert lines[1].startswith("11: 00010 output line")
    assert "offset=15" in lines[-1]
    hits = store.read(handle, grep=r"value=7\d\b")
    assert "matching lines" in hits and "value=70" in hits and "value=77" in hits
    # an invalid regex is searched literally
    store2 = SpillStore(tmp_path / "b")
    h2 = store2.put("a (b\nc [unclosed\nplain")
    out = store2.read(h2, grep="[unclosed")
    assert "2: c [unclosed" in out and "1 matching" in out
    assert "past the end" in store.read(handle, offset=5000)


def test_read_page_stays_small(tmp_path: Path) -> None:
    store = SpillStore(tmp_path)
    handle = store.put(numbered_lines(5000))
    page = store.read(handle, limit=2000)
    assert C.count(page) < 2000 and "more lines" in page


def test_bad_handles(tmp_path: Path) -> None:
    store = SpillStore(tmp_path)
    with pytest.raises(ToolError, match="invalid"):
        store.read("../../etc/passwd")
    with pytest.raises(ToolError, match="no spilled output"):
        store.read("abcdef123456")


def test_read_spill_tool(tmp_path: Path) -> None:
    store = SpillStore.for_root(tmp_path)
    shown, meta = store.maybe_spill(numbered_lines(4000, "日志"), C)
    assert meta
    registry = ToolRegistry([READ_SPILL])
    ctx = ToolContext(root=tmp_path)  # no service: falls back to <root>/.ctxagent/spill
    res = registry.run("read_spill", {"handle": meta["handle"], "grep": "03999"}, ctx)
    assert not res.is_error and "4000: 03999 日志" in res.content
    res = registry.run("read_spill", {"handle": meta["handle"], "offset": 100, "limit": 3}, ToolContext(root=Path("/nonexistent"), services=ToolServices(spill=store)))
    assert "101: 00100" in res.content
    res = registry.run("read_spill", {"handle": "ffffffffffff"}, ctx)
    assert res.is_error and "no spilled output" in res.content
    res = registry.run("read_spill", {}, ctx)
    assert res.is_error and "handle" in res.content
    assert make_read_spill_tool().permission == "read"


def test_giant_single_cjk_line_still_gets_a_head_and_tail(tmp_path: Path) -> None:
    store = SpillStore(tmp_path)
    text = "开头" + "很长的一行中文没有换行" * 5000 + "结尾"
    shown, meta = store.maybe_spill(text, C, spill_tokens=300)
    assert meta is not None and shown.startswith("开头") and "结尾" in shown
    assert C.count(shown) < 300
