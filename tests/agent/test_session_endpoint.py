"""The endpoint a session's requests go to is in its log (agent/session.py): recorded at the start
(provider, model, base URL — never a key, never a password), again after a /model switch, and read
back by `session_endpoint` for every command that calls a model for the session later."""

from __future__ import annotations

import json
from pathlib import Path

from ctxagent.agent.config import Config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session
from ctxagent.agent.session_ops import switch_model
from ctxagent.context.history import SessionLog


def _starts(log: SessionLog) -> list[dict]:
    return [e.data for e in log.events if e.kind == "session_start"]


def test_a_new_session_records_its_endpoint_without_secrets(work_repo: Path) -> None:
    from ctxagent.agent.session import Endpoint, session_endpoint

    cfg = Config(model="openai:gpt-5.4-mini", base_url="http://user:s3cret@127.0.0.1:8123/v1?api-key=abc#frag",
                 openai_api_key="sk-test-openai-000000000000000000", memory=False)
    session = open_session(work_repo, cfg)
    [start] = _starts(session.log)
    assert (start["provider"], start["model"], start["base_url"]) == ("openai", "openai:gpt-5.4-mini",
                                                                      "http://127.0.0.1:8123/v1")
    text = json.dumps([e.data for e in session.log.events])
    assert "s3cret" not in text and "abc" not in text and "sk-test" not in text
    assert session_endpoint(session.log) == Endpoint("openai", "gpt-5.4-mini", "http://127.0.0.1:8123/v1")


def test_a_model_switch_records_the_new_endpoint_once(work_repo: Path, tmp_path: Path) -> None:
    from ctxagent.agent.session import session_endpoint

    first, second = tmp_path / "first.json", tmp_path / "second.json"
    for path in (first, second):
        path.write_text(json.dumps([{"text": "hi"}]), encoding="utf-8")
    session = open_session(work_repo, Config(model=f"scripted:{first}", memory=False))
    agent = create_agent(session)
    assert len(_starts(session.log)) == 1  # the agent runs where the start said: nothing new
    switched = switch_model(session, f"scripted:{second}", create_agent, carry_from=agent)
    switched.run_turn("hello")
    starts = _starts(session.log)
    assert len(starts) == 2 and starts[1]["model"] == f"scripted:{second}" and starts[1]["cwd"] == starts[0]["cwd"]
    endpoint = session_endpoint(SessionLog.load(session.log.path))
    assert endpoint is not None and endpoint.label == f"scripted:{second}"
    session.log.close()


def test_an_old_log_names_only_its_model(work_repo: Path) -> None:
    from ctxagent.agent.session import Endpoint, session_endpoint
    from ctxagent.context.events import SessionStartData

    path = work_repo / "old.jsonl"
    with SessionLog.create(path.parent, "old") as log:
        log.append(SessionStartData(session="old", model="claude-sonnet-4-5", cwd=str(work_repo)))
        log.sync()
    assert session_endpoint(SessionLog.load(path)) == Endpoint("anthropic", "claude-sonnet-4-5", None)  # URL unknown
