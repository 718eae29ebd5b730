"""Instruction files beyond the root (agent/instructions/loading.py): a folder's own AGENTS.md / CLAUDE.md is
loaded the first time a tool touches a path beneath it, once, appended to the system prompt (the prefix
grows, the earlier part is unchanged) and logged before the step that sends it; a resume sends it again;
a link out of the repository is never read; the user's own AGENTS.md comes from the config folder; and
/context lists each file with its tokens."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from ctxagent.agent.config import load_config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.instructions.loading import NestedInstructions, instruction_sections, system_prompt
from ctxagent.agent.session import open_session
from ctxagent.agent.updates import AgentEvent, Notice
from ctxagent.context.tokens import get_counter
from ctxagent.tui.app.screens.context_screen import system_rows


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "pkg" / "core").mkdir(parents=True)
    (repo / "docs").mkdir()
    (repo / "AGENTS.md").write_text("Root rule: run the tests.\n")
    (repo / "pkg" / "AGENTS.md").write_text("pkg rule: 金额用 Decimal。\n")
    (repo / "pkg" / "core" / "CLAUDE.md").write_text("core rule: no globals.\n")
    (repo / "pkg" / "core" / "money.py").write_text("X = 1\n")
    (repo / "docs" / "AGENTS.md").write_text("docs rule: never loaded here.\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def _agent(repo: Path, tmp_path: Path, script: list[dict[str, Any]], resume: str | None = None) -> tuple[Any, list[AgentEvent]]:
    path = tmp_path / f"script{resume or ''}.json"
    path.write_text(json.dumps(script, ensure_ascii=False))
    session = open_session(repo, load_config(repo, {"model": f"scripted:{path}", "permission_mode": "yolo"}),
                           resume=resume)
    events: list[AgentEvent] = []
    return create_agent(session, on_event=events.append), events


def _systems(agent: Any) -> list[str]:
    return [r["system"] for r in agent.parts.provider.requests]


def test_a_nested_file_joins_the_prompt_once_when_a_tool_works_in_its_folder(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    read = {"name": "read_file", "arguments": {"path": "pkg/core/money.py"}}
    agent, events = _agent(repo, tmp_path, [{"tool_calls": [read]}, {"tool_calls": [read]}, {"text": "done"}])
    first_system = agent.parts.system
    assert "Root rule" in first_system and "pkg rule" not in first_system
    agent.run_turn("look at money")
    first, second, third = _systems(agent)
    assert first == first_system
    assert second.startswith(first) and second != first  # grown, not changed
    assert [n for w, n, _ in instruction_sections(second)] == ["AGENTS.md", "pkg/AGENTS.md", "pkg/core/CLAUDE.md"]
    assert "金额用 Decimal" in second and "docs rule" not in second
    assert third == second  # loaded once
    logged = [e.data["text"] for e in agent.session.log.events if e.kind == "system_prompt"]
    assert logged == [first, second]  # logged before the step that sent it: `inspect` rebuilds each step
    said = [e.message for e in events if isinstance(e, Notice) and e.message.startswith("loaded ")]
    assert said == ["loaded pkg/AGENTS.md into the system prompt: the agent works in pkg/",
                    "loaded pkg/core/CLAUDE.md into the system prompt: the agent works in pkg/core/"]
    agent.session.log.close()

    resumed, _ = _agent(repo, tmp_path, [{"text": "again"}], resume=str(agent.session.id))
    assert resumed.parts.system == second  # the same prefix after a resume
    resumed.session.log.close()


def test_a_link_out_of_the_repository_is_not_read(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-KEY\n")
    (repo / "pkg" / "AGENTS.md").unlink()
    os.symlink(secret, repo / "pkg" / "AGENTS.md")
    parts = NestedInstructions(repo, None).touched(["pkg/x.py", "../outside.py", "/etc/passwd"])
    assert len(parts) == 1 and "TOP-SECRET" not in parts[0] and "pkg/AGENTS.md was not read" in parts[0]


def test_folders_are_found_from_paths_and_directories_and_skip_state_folders(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / ".ctxagent").mkdir()
    (repo / ".ctxagent" / "AGENTS.md").write_text("planted\n")
    nested = NestedInstructions(repo, None)
    assert nested.touched([".ctxagent/spill/x", str(repo / "docs")]) == [
        "# Project instructions (docs/AGENTS.md)\n\ndocs rule: never loaded here."]
    assert nested.touched(["docs/other.md"]) == []  # the folder was looked at already


def test_the_users_own_file_comes_first_and_context_lists_every_file(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    user_file = Path(os.environ["CTXAGENT_HOME"]) / "config" / "AGENTS.md"
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_text("Answer in English and 中文.\n")
    assert "Answer in English" not in system_prompt(repo)  # a benchmark's prompt: not the machine's
    system = system_prompt(repo, nested=["pkg/AGENTS.md"], user=True)
    sections = instruction_sections(system)
    assert [(w, n) for w, n, _ in sections] == [("user", str(user_file)), ("project", "AGENTS.md"),
                                                ("project", "pkg/AGENTS.md")]
    counter = get_counter("o200k_base")
    rows = system_rows(system, counter.count)
    assert rows[0].startswith("ctxagent's system prompt: ") and rows[0].endswith(" tokens")
    assert rows[1] == f"{user_file} (yours, for every repository): {counter.count(sections[0][2]):,} tokens"
    assert rows[2] == f"AGENTS.md: {counter.count('Root rule: run the tests.'):,} tokens"
    assert rows[3].startswith("pkg/AGENTS.md (loaded as the agent worked in pkg/): ")
    assert system_rows("You are ctxagent.") == ["ctxagent's system prompt; no AGENTS.md / CLAUDE.md in this repository"]


def test_a_session_prompt_has_the_users_own_file_before_the_repositorys(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    user_file = Path(os.environ["CTXAGENT_HOME"]) / "config" / "AGENTS.md"
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_text("Prefer small commits.\n")
    agent, _ = _agent(repo, tmp_path, [{"text": "ok"}])
    system = agent.parts.system
    assert system.index("# User instructions (") < system.index("# Project instructions (AGENTS.md)")
    assert "Prefer small commits." in system
    agent.session.log.close()
