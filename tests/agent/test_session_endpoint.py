"""The endpoint a session's requests go to is in its log (agent/session.py): recorded at the start
(provider, model, base URL — never a key, never a password), again after a /model switch, and read
back by `session_endpoint` for every command that calls a model for the session later."""

from __future__ import annotations

import json
from pathlib import Path

from ctxagent.agent.config import Config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import Session, open_session
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


def _written(work_repo: Path, cfg: Config) -> Session:
    """A session whose log is on disk (a new one is written with its first message), closed."""
    from ctxagent.context.events import UserData

    session = open_session(work_repo, cfg)
    session.log.append(UserData(text="hello", turn=1))
    session.log.sync()
    session.log.close()
    return session


def _plant_endpoint(path: Path, provider: str, model: str, base_url: str) -> None:
    """What anyone who can write the repository can do: a `session_start` naming another base URL."""
    from ctxagent.context.events import SessionStartData

    log = SessionLog.open(path)
    log.append(SessionStartData(session=log.session_id, model=f"{provider}:{model}", provider=provider,
                                base_url=base_url))
    log.sync()
    log.close()


def test_a_resume_keeps_the_model_but_never_takes_the_logs_base_url(work_repo: Path) -> None:
    """The log is in the repository: it names the session's model, but the config says where the key
    goes. A recorded base URL that differs is said, in one line naming both, and not used."""
    mine = "http://127.0.0.1:8123/v1"
    cfg = Config(model="openai:gpt-5.4-mini", base_url=mine, openai_api_key="sk-test-openai-000000000000000000",
                 memory=False)
    first = _written(work_repo, cfg)
    assert first.notices == []
    _plant_endpoint(first.log.path, "openai", "gpt-5.4-mini", "https://collector.example/v1")
    resumed = open_session(work_repo, Config(model="anthropic:claude-sonnet-4-5", openai_base_url=mine,
                                             openai_api_key="sk-test-openai-000000000000000000", memory=False),
                           resume=first.id, keep_model=True)
    assert resumed.config.model == "openai:gpt-5.4-mini"  # the model is the session's …
    assert resumed.config.openai_base_url == mine  # … the URL the config's
    assert resumed.notices == ["this session ran against https://collector.example/v1, now "
                               f"{mine} from your config (the session log never chooses where requests go)"]
    resumed.log.close()
    # a generic base URL the config gave with an Anthropic model is Anthropic's: the log's OpenAI model
    # does not take it (nor send it the OpenAI key), it goes to OpenAI's own URL
    other = open_session(work_repo, Config(model="anthropic:claude-sonnet-4-5", base_url=mine,
                                           openai_api_key="sk-test-openai-000000000000000000", memory=False),
                         resume=first.id, keep_model=True)
    assert other.config.model == "openai:gpt-5.4-mini" and other.config.base_url_provider == "anthropic"
    assert other.notices == ["this session ran against https://collector.example/v1, now openai's own URL from "
                             "your config (the session log never chooses where requests go)"]
    other.log.close()


def test_a_resume_on_the_recorded_base_url_says_nothing(work_repo: Path) -> None:
    cfg = Config(model="openai:gpt-5.4-mini", base_url="http://127.0.0.1:8123/v1",
                 openai_api_key="sk-test-openai-000000000000000000", memory=False)
    first = _written(work_repo, cfg)
    again = open_session(work_repo, cfg, resume=first.id, keep_model=True)
    assert again.notices == []
    again.log.close()
    # the provider's own URL now, where the log said another: that is said too, by name
    _plant_endpoint(first.log.path, "openai", "gpt-5.4-mini", "http://10.0.0.9/v1")
    own = open_session(work_repo, Config(model="openai:gpt-5.4-mini", openai_api_key="sk-test-openai-000000000000000000",
                                         memory=False), resume=first.id, keep_model=True)
    assert own.config.base_url is None and own.config.openai_base_url is None
    assert own.notices and own.notices[0].startswith("this session ran against http://10.0.0.9/v1, now openai's own URL")
    own.log.close()


def test_an_old_log_without_a_base_url_is_not_a_change(work_repo: Path) -> None:
    from ctxagent.agent.session import resolve_session
    from ctxagent.context.events import SessionStartData

    first = _written(work_repo, Config(model="openai:gpt-5.4-mini", memory=False,
                                       openai_api_key="sk-test-openai-000000000000000000"))
    path = resolve_session(work_repo, first.id)
    lines = path.read_text(encoding="utf-8").splitlines()
    event = json.loads(lines[0])
    assert event["kind"] == SessionStartData.KIND
    event["data"] = {"session": first.id, "model": "gpt-5.4-mini"}  # what an older ctxagent wrote
    path.write_text("\n".join([json.dumps(event), *lines[1:]]) + "\n", encoding="utf-8")
    again = open_session(work_repo, Config(model="openai:gpt-5.4-mini", base_url="http://127.0.0.1:9/v1", memory=False,
                                           openai_api_key="sk-test-openai-000000000000000000"),
                         resume=first.id, keep_model=True)
    assert again.notices == []
    again.log.close()
