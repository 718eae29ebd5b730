"""A sub-agent's window: too small a one is refused with its minimum; one its task cannot fit stops the
child with that reason (not an anonymous error) and the parent's step goes on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ctxagent.agent.config import Config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session
from ctxagent.agent.subagents.tool import MIN_WINDOW


def agent_for(repo: Path, tmp_path: Path, calls: list[dict[str, Any]]) -> Any:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"tool_calls": calls}, {"text": "the parent went on"}],
                                "agents": {"dig": [{"text": "never sent"}]}}))
    return create_agent(open_session(repo, Config(model=f"scripted:{path}", memory=False)))


def test_a_window_too_small_is_refused_and_a_full_one_is_the_stop_reason(work_repo: Path, tmp_path: Path) -> None:
    huge = "Read every line below and find the failing one.\n" + "\n".join(f"row {i}: a value of {i * 7}" for i in range(2000))
    agent = agent_for(work_repo, tmp_path, [
        {"name": "task", "arguments": {"description": "dig", "prompt": "look", "window": MIN_WINDOW - 1}},
        {"name": "task", "arguments": {"description": "dig", "prompt": huge, "window": MIN_WINDOW}},
    ])
    done = agent.run_turn("go")
    assert done.text == "the parent went on"
    small, full = [e.tool_result for e in agent.log.of_kind("tool_result")]
    assert small.is_error and "window" in small.content and f"{MIN_WINDOW}" in small.content
    sub = full.meta.model_extra["subagent"]
    assert sub["stop_reason"] == "error" and "its window is full" in full.content
    agent.log.close()
