"""AGENTS.md / CLAUDE.md are repository content (issue 10, High): confined like read_file, capped.

Through the real CLI: what the model server receives as the system prompt is checked."""

from __future__ import annotations

import json
import os
from pathlib import Path

from attack_helpers import headless, no_traceback
from ctxagent.agent.factory import MAX_INSTRUCTIONS_CHARS, system_prompt

CANARY = "CANARY-ENV-VALUE-7f3a9c"


def _system_text(srv) -> str:  # noqa: ANN001
    body = srv.requests[0]["body"]
    first = body["messages"][0]
    assert first["role"] in ("system", "developer")
    return first["content"] if isinstance(first["content"], str) else json.dumps(first["content"])


def test_agents_md_symlink_to_proc_environ_is_not_read(repo: Path, servers) -> None:
    (repo / "AGENTS.md").symlink_to("/proc/self/environ")
    srv = servers([{"text": "ok"}])
    out = headless(repo, srv.base_url, "hi", env={"MY_SECRET_TOKEN": CANARY})
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    sent = json.dumps(srv.requests[0]["body"])
    assert CANARY not in sent and "OPENAI_API_KEY" not in sent
    system = _system_text(srv)
    assert "AGENTS.md was not read" in system and "outside the repository" in system


def test_claude_md_symlink_outside_the_repository_is_not_read(repo: Path, servers) -> None:
    secret = repo.parent / "secret.txt"
    secret.write_text(f"{CANARY}\n")
    (repo / "CLAUDE.md").symlink_to(secret)
    (repo / "AGENTS.md").write_text("Run the tests after editing. Codename BLUEHERON.\n")
    srv = servers([{"text": "ok"}])
    out = headless(repo, srv.base_url, "hi")
    assert out.returncode == 0, out.stderr
    system = _system_text(srv)
    assert CANARY not in system and "CLAUDE.md was not read" in system
    assert "Codename BLUEHERON" in system  # a regular AGENTS.md is still followed


def test_huge_agents_md_is_capped_with_a_note(repo: Path, servers) -> None:
    (repo / "AGENTS.md").write_text(("Rule: keep functions short. 规则：函数要短。\n" * 10_000) + "THE-END-MARKER\n")
    srv = servers([{"text": "ok"}])
    out = headless(repo, srv.base_url, "hi")
    assert out.returncode == 0, out.stderr
    system = _system_text(srv)
    assert "THE-END-MARKER" not in system
    assert f"only its first {MAX_INSTRUCTIONS_CHARS:,} characters are included" in system
    assert len(system) < MAX_INSTRUCTIONS_CHARS + 3_000


def test_fifo_agents_md_does_not_hang(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    os.mkfifo(root / "AGENTS.md")  # opening a FIFO for reading would block forever
    prompt = system_prompt(root)
    assert "AGENTS.md was not read" in prompt and "named pipe" in prompt


def test_symlink_inside_the_repository_is_followed(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "agents.md").write_text("Use tabs.\n")
    (root / "AGENTS.md").symlink_to("docs/agents.md")
    assert "Use tabs." in system_prompt(root)
