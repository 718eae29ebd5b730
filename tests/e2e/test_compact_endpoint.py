"""`ctxagent compact` sends the conversation to the session's own endpoint — its model and base URL as
the log records them — never to the provider the environment names now."""

from __future__ import annotations

import json
from pathlib import Path

SUMMARY = ("Decisions:\n- [turn 1] use SQLite\nConstraints:\n- never edit AGENTS.md\nChanges:\n- none\n"
           "Open tasks:\n- none\n")


def test_compact_uses_the_sessions_base_url(repo: Path, scripted_server, ctxagent_run, read_session) -> None:
    turns = [{"text": f"answer {i}. We decided to use SQLite.",
              "tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]} if i % 2 == 0
             else {"text": f"done {i}"} for i in range(6)]
    session_server = scripted_server([*turns, {"text": SUMMARY}])
    elsewhere = scripted_server([{"text": SUMMARY}] * 3)  # what the environment would send to today
    session = None
    for t in range(3):
        args = ["-p", f"turn {t}: never edit AGENTS.md", "--model", "openai:gpt-5.4-mini",
                "--base-url", session_server.url, "--output", "json"] + (["--resume", session] if session else [])
        out = ctxagent_run(repo, *args)
        assert out.returncode == 0, out.stderr
        session = json.loads(out.stdout)["session"]
    assert session is not None
    served = len(session_server.requests())
    comp = ctxagent_run(repo, "compact", session, env={"OPENAI_BASE_URL": elsewhere.url, "CTXAGENT_MODEL": "gpt-5.4"})
    assert comp.returncode == 0, comp.stderr
    assert "(model summary)" in comp.stdout
    assert elsewhere.requests() == []  # nothing went where the session never sent anything
    assert len(session_server.requests()) == served + 1
    compaction = [e for e in read_session(repo, session) if e["kind"] == "compaction"][-1]["data"]
    assert compaction["method"] == "model" and "use SQLite" in compaction["summary"]
