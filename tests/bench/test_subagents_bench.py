"""`ctxagent bench subagents`: both ways measured from the real loop's logs, and Claude Code's
sub-agent files read into rows."""

from __future__ import annotations

import json
from pathlib import Path

from ctxagent.tui.lab.bench import subagents


def test_inline_and_delegated_are_measured_from_the_logs() -> None:
    inline, delegated = subagents.run()
    assert inline["case"] == "inline" and delegated["case"] == "delegated"
    assert inline["answer_reached_parent"] and delegated["answer_reached_parent"]
    assert len(inline["parent_steps"]) == 4 and len(delegated["parent_steps"]) == 2
    assert inline["child_tokens"] == 0 and delegated["child_tokens"] > 0
    assert delegated["parent_peak"] < inline["parent_peak"]  # the reading happened in the child's window
    assert delegated["total_tokens"] == delegated["parent_tokens"] + delegated["child_tokens"]
    assert "| delegated |" in subagents.table([inline, delegated])


def test_claude_code_sub_agent_rows(tmp_path: Path) -> None:
    run = tmp_path / "abcdef12-0000"
    (run / "subagents").mkdir(parents=True)
    def call(mid: str, prompt: int, text: str) -> str:
        return json.dumps({"message": {"id": mid, "role": "assistant", "content": [{"type": "text", "text": text}],
                                       "usage": {"input_tokens": prompt, "cache_read_input_tokens": 100, "output_tokens": 10}}})
    result = json.dumps({"message": {"role": "user", "content": [{"type": "tool_result", "content": "x" * 4000}]}})
    (run / "subagents" / "agent-a1.jsonl").write_text("\n".join([call("m1", 50, "look"), result, call("m2", 1050, "done" * 10)]))
    (run / "subagents" / "agent-acompact-1.jsonl").write_text(call("c", 9, "summary"))
    (tmp_path / "abcdef12-0000.jsonl").write_text(call("p1", 5000, "parent"))
    (row,) = subagents.real_rows(tmp_path)
    assert row["calls"] == 2 and row["peak"] == 1150 and row["total_tokens"] == 150 + 10 + 1150 + 10
    assert row["tool_output_read"] == 1000 and row["answer_tokens"] == 10 and row["saved_in_parent_window"] == 990
    assert row["parent_peak"] == 5100 and "990 (19% of its peak)" in subagents.real_table([row])
