"""Provider faults through the real console script: meaningful exit codes, partial text kept and
marked, and the session resumable afterwards."""

from __future__ import annotations

import json
from pathlib import Path


def test_exit_codes_partial_text_and_resume(repo: Path, scripted_server, ctxagent_run, read_session) -> None:
    (repo / "notes.md").write_text("".join(f"- note {i}: the release checklist keeps step {i} as written\n"
                                           for i in range(120)))
    srv = scripted_server([
        {"fault": "401"},
        {"fault": "cut", "text": "Half of the ans"},
        {"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md"}}]},
        {"text": "Read them."},
        {"fault": "context_length"},
        # the builder's relief compacts with the (cheaper) summary model: a valid structured summary
        {"text": "Decisions:\n- none\nConstraints:\n- none\nChanges:\n- none\nOpen tasks:\n- retry the greeting\n"},
        {"fault": "context_length"},
        {"text": "All good now."},
    ])
    base = ["--model", "anthropic:claude-sonnet-5-5", "--base-url", srv.url, "--output", "json"]

    auth = ctxagent_run(repo, "-p", "hello", *base)
    assert auth.returncode == 3, auth.stderr
    first = json.loads(auth.stdout)
    assert first["stop_reason"] == "error" and first["error"]["type"] == "AuthError"

    cut = ctxagent_run(repo, "-p", "try again", "--continue", *base)
    assert cut.returncode == 1, cut.stderr
    res = json.loads(cut.stdout)
    assert res["error"]["type"] == "StreamError" and res["result"] == "Half of the ans"
    last = [e for e in read_session(repo, res["session"]) if e["kind"] == "assistant"][-1]["data"]
    assert last["partial"] is True and last["text"] == "Half of the ans"

    read = ctxagent_run(repo, "-p", "read the notes", "--continue", *base)
    assert read.returncode == 0, read.stderr

    # a context-length 400: the provider counts more than ctxagent estimated, so the step is rebuilt
    # for that (the builder compacts the older turns) and retried once; a second one in a row means
    # the context cannot fit: exit 4, said once
    too_long = ctxagent_run(repo, "-p", "and again", "--continue", *base)
    assert too_long.returncode == 4, too_long.stderr
    assert json.loads(too_long.stdout)["error"]["type"] == "ContextLengthError"
    assert too_long.stderr.count("ctxagent: the prompt is too long") == 1
    comp = [e for e in read_session(repo, res["session"]) if e["kind"] == "compaction"][-1]["data"]
    assert comp["method"] == "model" and "retry the greeting" in comp["summary"]

    ok = ctxagent_run(repo, "-p", "last try", "--continue", *base)
    assert ok.returncode == 0, ok.stderr
    done = json.loads(ok.stdout)
    assert done["result"] == "All good now." and done["session"] == first["session"]
    # the compaction masked the partial reply in the view; the log still holds it, marked
    events = read_session(repo, done["session"])
    assert any(e["kind"] == "assistant" and e["data"]["partial"] and e["data"]["text"] == "Half of the ans" for e in events)
    assert "[Summary of earlier conversation" in json.dumps(srv.requests()[-1]["body"])
