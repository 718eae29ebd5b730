"""read_event: everything the engine cuts can be read back by its event id, paged and grep-able."""

from __future__ import annotations

from pathlib import Path

from ctxagent.tools.history_tool import make_read_event_tool


def test_a_spilled_output_is_read_back_whole_through_the_loop(make_agent, work_repo: Path) -> None:
    big = "\n".join(f"line {i}: value={i * 7} 不要删除" for i in range(3000))
    (work_repo / "big.log").write_text(big + "\n", encoding="utf-8")
    agent, _, provider = make_agent(
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "big.log", "end_line": 3000}}]},
            {"tool_calls": [{"name": "read_event", "arguments": {"id": 5, "grep": "value=14\\b"}}]},
            {"tool_calls": [{"name": "read_event", "arguments": {"id": 5, "offset": 1990, "limit": 5}}]},
            {"tool_calls": [{"name": "read_event", "arguments": {"id": 999}}]},
            {"text": "done"},
        ],
        extra_tools=[make_read_event_tool()],
    )
    done = agent.run_turn("look at big.log")
    assert done.stop_reason == "end_turn"
    results = [e for e in agent.session.log.events if e.kind == "tool_result"]
    spilled = results[0]
    # ids: 0 session_start, 1 system_prompt, 2 user, 3 context_report, 4 assistant, 5 this result
    assert spilled.id == 5 and spilled.tool_result.spill_ref is not None  # the log holds only a preview
    assert "line 1500" not in spilled.tool_result.content
    grep = results[1].tool_result.content
    assert "1 matching lines" in grep and "value=14 不要删除" in grep  # from the spilled original
    page = results[2].tool_result.content
    assert "lines 1991–1995" in page and "line 1993: value=13951" in page
    assert results[3].tool_result.is_error and "no event 999" in results[3].tool_result.content


def test_a_compacted_turn_is_read_back(make_agent) -> None:
    agent, _, _ = make_agent([{"text": "We'll use SQLite for the cache."}, {"text": "ok"},
                              {"tool_calls": [{"name": "read_event", "arguments": {"id": 2}}]}, {"text": "done"}],
                             extra_tools=[make_read_event_tool()])
    agent.run_turn("Which store?")
    agent.run_turn("Thanks.")
    assert agent.compact() is not None
    agent.run_turn("What did you say about the cache?")
    shown = [e for e in agent.session.log.events if e.kind == "tool_result"][-1].tool_result.content
    assert "event 2: user message, turn 1" in shown or "event 2:" in shown
    first_user = next(e for e in agent.session.log.events if e.kind == "user")
    assert first_user.id == 2 and "Which store?" in shown
