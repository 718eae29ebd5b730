"""`ctxagent compact` calls the session's model, never at a base URL the log names (the log lives in
the repository: it must not send the user's key elsewhere), and never sends the conversation to a
provider the session did not use: when the two differ, the summary is the extractive one unless the
user names the URL on the command line."""

from __future__ import annotations

import json
from pathlib import Path

SUMMARY = ("Decisions:\n- [turn 1] use SQLite\nConstraints:\n- never edit AGENTS.md\nChanges:\n- none\n"
           "Open tasks:\n- none\n")


def test_compact_never_takes_the_logs_base_url(repo: Path, scripted_server, ctxagent_run, read_session) -> None:
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
    env = {"OPENAI_BASE_URL": elsewhere.url, "CTXAGENT_MODEL": "gpt-5.4"}
    # the log says the session_server, the config says elsewhere: neither gets the conversation
    refused = ctxagent_run(repo, "compact", session, env=env)
    assert refused.returncode == 0, refused.stderr
    assert f"this session ran against {session_server.url}, now {elsewhere.url}" in refused.stderr
    assert "--base-url" in refused.stderr and "(model summary)" not in refused.stdout
    assert elsewhere.requests() == [] and len(session_server.requests()) == served
    comp = ctxagent_run(repo, "compact", session, "--base-url", session_server.url, env=env)
    assert comp.returncode == 0, comp.stderr
    assert "(model summary)" in comp.stdout
    assert elsewhere.requests() == []  # nothing went where the session never sent anything
    assert len(session_server.requests()) == served + 1
    compactions = [e["data"] for e in read_session(repo, session) if e["kind"] == "compaction"]
    assert compactions[0]["method"] == "extractive"
    compaction = compactions[-1]
    assert compaction["method"] == "model" and "use SQLite" in compaction["summary"]
