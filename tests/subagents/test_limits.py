"""A sub-agent's window: too small a one is refused with its minimum; one its task cannot fit stops the
child with that reason (not an anonymous error) and the parent's step goes on."""

from __future__ import annotations

import json
import shutil
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


def test_an_answer_past_the_configured_cap_is_spilled_with_a_handle(work_repo: Path, tmp_path: Path) -> None:
    long_answer = " ".join(f"finding-{i} in module_{i}.py line {i * 3}" for i in range(400))  # ~4k tokens
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"tool_calls": [{"name": "task", "arguments": {"description": "dig", "prompt": "look"}}]},
                                          {"text": "the parent went on"}],
                                "agents": {"dig": [{"text": long_answer}]}}))
    results = {}
    for cap in (2000, 20_000):  # the default keeps the head; a larger configured cap keeps it all
        repo = work_repo if cap == 2000 else tmp_path / "again"
        if repo != work_repo:
            shutil.copytree(work_repo, repo, ignore=shutil.ignore_patterns(".ctxagent"))
        agent = create_agent(open_session(repo, Config(model=f"scripted:{path}", memory=False, subagent_answer_tokens=cap,
                                                       spill_tokens=30_000)))
        assert agent.run_turn("go").text == "the parent went on"
        results[cap] = agent.log.of_kind("tool_result")[0].tool_result
        agent.log.close()
    cut, whole = results[2000].content, results[20_000].content
    assert "finding-200 " not in cut and "read_spill" in cut  # the middle is behind the handle (head and tail shown)
    assert all(f"finding-{i} " in whole for i in range(400)) and "read_spill" not in whole
