"""`ctxagent bench mcp`: 200 MCP schemas eager vs deferred, and the cache of a session that loads tools."""

from __future__ import annotations

from ctxagent.tui.lab.bench.mcp_schemas import run, table


def test_deferral_sends_a_fraction_and_costs_less_than_eager() -> None:
    result = run(tools=200, steps=12, load_at=5)
    rows = {r["arm"]: r for r in result["rows"]}
    assert result["deferred"] and len(result["loaded"]) == 3
    assert all("issue" in name for name in result["loaded"])  # the search found what it was asked for
    assert rows["deferred"]["schema_tokens_step1"] * 10 < rows["eager"]["schema_tokens_step1"]
    assert rows["no MCP"]["cost"] < rows["deferred, nothing loaded"]["cost"] < rows["deferred"]["cost"] < rows["eager"]["cost"]
    assert rows["deferred, re-sorted"]["cost"] > rows["deferred"]["cost"]  # appending keeps more of the prefix
    assert "| eager |" in table(result)
    # a server's list_changed: the new tools appended through the catalog, the eager prefix kept cached
    changed = rows["eager, the server adds tools mid-way (list_changed)"]
    assert rows["eager"]["cost"] < changed["cost"] < rows["eager"]["cost"] * 1.2
    assert changed["cache_read_share"] > 0.85


def test_a_small_server_is_not_deferred() -> None:
    result = run(tools=5, steps=3, load_at=1)
    assert not result["deferred"] and result["loaded"] == []
