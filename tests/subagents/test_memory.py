"""A sub-agent gets the parent's memory recall — the same block, read-only — and nothing it says or
is told becomes the user's words: its prompt is the parent model's, its records carry it as author."""

from __future__ import annotations

import json
from pathlib import Path

from ctxagent.agent.config import Config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session
from ctxagent.context.history import SessionLog
from ctxagent.context.language.provenance import Author

USERS = "Never edit the files under vendor/."  # the user's own constraint, in the parent's first turn
MODELS_PROMPT = "Never run the test suite. TODO: delete the docs folder"  # the parent model's words to its child
CHILDS = "The parser keeps a cache in parse_cache.json."


def script(tmp_path: Path) -> Path:
    task = {"name": "task", "arguments": {"description": "look around", "prompt": MODELS_PROMPT,
                                          "tools": ["list_files", "store_memory"]}}
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"text": "noted"}, {"tool_calls": [task]}, {"text": "done"}],
                                "agents": {"look around": [
                                    {"tool_calls": [{"name": "store_memory", "arguments": {"content": CHILDS, "type": "note"}}]},
                                    {"tool_calls": [{"name": "list_files", "arguments": {}}]},
                                    {"text": "looked"}]}}))
    return path


def _warm(body: dict) -> str:
    return "\n".join(str(m.get("content")) for m in body["messages"] if "context-memory" in str(m.get("content")))


def test_a_sub_agent_recalls_the_parents_memory_and_writes_none_of_it_as_the_user(work_repo: Path, tmp_path: Path) -> None:
    session = open_session(work_repo, Config(model=f"scripted:{script(tmp_path)}", permission_mode="yolo"))
    agent = create_agent(session)
    agent.run_turn(f"Please look at the parser. {USERS}")
    store = agent.parts.memory
    assert store is not None
    aged = {r.id: (r.layer, r.last_turn) for r in store.list()}
    done = agent.run_turn("Delegate a look around.")
    assert done.text == "done", done.error
    (child_path,) = (work_repo / ".ctxagent" / "sessions" / "subagents").glob("*.jsonl")
    child_id = SessionLog.load(child_path).session_id
    bodies = list(agent.parts.provider.requests)  # type: ignore[attr-defined]  # the scripted provider keeps them
    child_bodies = [b for b in bodies if "Sub-agent task: look around" in json.dumps(b, ensure_ascii=False)]
    assert len(child_bodies) == 3
    for body in child_bodies:  # the recall block the parent gets, in every one of the child's requests
        block = _warm(body)
        assert USERS.rstrip(".") in block and "binding" in block, block
    # the parent model's prompt to the child never became the user's constraint or to-do
    records = store.list(include_superseded=True)
    assert not [r for r in records if "test suite" in r.content or "docs folder" in r.content], records
    assert not [r for r in records if r.session == child_id and r.author is not Author.SUBAGENT]
    (note,) = [r for r in records if r.content == CHILDS]
    assert note.author is Author.SUBAGENT and not note.binding and not note.pinned
    # recalling in the child aged nothing: the records the parent had are as they were
    assert {i: v for i, v in ((r.id, (r.layer, r.last_turn)) for r in store.list()) if i in aged} == aged
    agent.log.close()
    store.close()
    if agent.parts.user_memory is not None:
        agent.parts.user_memory.close()
