"""A sub-agent's model is the user's config's, never the call's (issue 30): `task(model=…)` is refused
before anything is made or read — `scripted:PATH` included, so no repository file chooses a child's
replies and the call answers nothing about which paths exist — and no repository config names a
scripted model, trusted or not, for the session, its summaries or its sub-agents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ctxagent.agent.config import Config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session
from ctxagent.agent.trust import split_untrusted, trust_repo
from ctxagent.tui.lab.scripted.spec import SCRIPTED


def _task(model: str) -> dict[str, Any]:
    return {"name": "task", "arguments": {"description": "dig", "prompt": "look", "model": model}}


def test_a_call_naming_a_scripted_model_is_refused_the_same_whether_the_file_exists(work_repo: Path,
                                                                                      tmp_path: Path) -> None:
    evil = work_repo / "replies.json"  # a file the repository ships: its turns would be the child's
    evil.write_text(json.dumps([{"text": "scripted by the repository"}] * 3), encoding="utf-8")
    missing, outside = work_repo / "nope.json", Path("/etc/passwd")
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"tool_calls": [_task(f"scripted:{p}") for p in (evil, missing, outside)]},
                                          {"text": "the parent went on"}],
                                "agents": {"dig": [{"text": "the configured model's child"}] * 3}}), encoding="utf-8")
    agent = create_agent(open_session(work_repo, Config(model=f"scripted:{path}", memory=False)))
    assert agent.run_turn("go").text == "the parent went on"
    results = [e.tool_result for e in agent.log.of_kind("tool_result")]
    assert len(results) == 3 and all(r.is_error for r in results)
    assert len({r.content for r in results}) == 1  # one answer: no oracle for which file exists
    assert "not the call's to choose" in results[0].content and f"scripted:{path}" in results[0].content
    assert "scripted by the repository" not in json.dumps([e.data for e in agent.log.events])
    assert not (agent.session.log.path.parent / "subagents").exists()  # no child ran
    agent.log.close()


def test_a_call_naming_the_configured_model_runs_it(work_repo: Path, tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"tool_calls": [_task(f"scripted:{tmp_path / 'script.json'}")]},
                                          {"text": "the parent went on"}],
                                "agents": {"dig": [{"text": "the configured model's child"}]}}), encoding="utf-8")
    agent = create_agent(open_session(work_repo, Config(model=f"scripted:{path}", memory=False)))
    agent.run_turn("go")
    [result] = [e.tool_result for e in agent.log.of_kind("tool_result")]
    assert not result.is_error and "the configured model's child" in result.content
    agent.log.close()


def test_the_task_schema_offers_no_model(work_repo: Path, tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text("[]", encoding="utf-8")
    agent = create_agent(open_session(work_repo, Config(model=f"scripted:{path}", memory=False)))
    task = agent.parts.registry.get("task")
    assert task is not None and "model" not in json.dumps(task.schema)
    agent.log.close()


@pytest.mark.parametrize("key", ["model", "summary_model", "subagent_model"])
@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
def test_no_repository_names_a_scripted_model(tmp_path: Path, key: str, trusted: bool) -> None:
    if trusted:
        trust_repo(tmp_path)
    kept, ignored = split_untrusted({key: f" Scripted:{tmp_path / 's.json'}", "max_steps": 3}, tmp_path, "repo")
    assert kept == {"max_steps": 3}
    assert [(i.key, i.reason, i.user_only) for i in ignored] == [(key, SCRIPTED.untrusted_reason, True)]


def test_an_untrusted_repository_does_not_choose_the_subagent_model(tmp_path: Path) -> None:
    kept, ignored = split_untrusted({"subagent_model": "anthropic:claude-haiku-5-5"}, tmp_path, "repo")
    assert kept == {} and [i.key for i in ignored] == ["subagent_model"]
    trust_repo(tmp_path)
    assert split_untrusted({"subagent_model": "anthropic:claude-haiku-5-5"}, tmp_path, "repo", trust="trusted")[0] == {
        "subagent_model": "anthropic:claude-haiku-5-5"}
