"""`ctxagent report | doctor | compact | config | sessions` on a real session made by a real run."""

from __future__ import annotations

import json
from pathlib import Path


def _session(repo: Path, scripted_server, ctxagent_run, turns: int = 3) -> str:
    srv = scripted_server([{"text": f"answer {i}. We decided to use SQLite.", "tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]} if i % 2 == 0 else {"text": f"done {i}"} for i in range(turns * 2)])
    session = None
    for t in range(turns):
        args = ["-p", f"turn {t}: never edit AGENTS.md", "--model", "openai:gpt-5.4-mini", "--base-url", srv.url, "--output", "json"]
        if session:
            args += ["--resume", session]
        out = ctxagent_run(repo, *args)
        assert out.returncode == 0, out.stderr
        session = json.loads(out.stdout)["session"]
    assert session
    return session


def test_report_doctor_compact_config(repo: Path, scripted_server, ctxagent_run, read_session) -> None:
    session = _session(repo, scripted_server, ctxagent_run)
    rep = ctxagent_run(repo, "report", "--last", "--json")
    assert rep.returncode == 0, rep.stderr
    reports = json.loads(rep.stdout)
    assert [r["step"] for r in reports] == list(range(1, 7))
    table = ctxagent_run(repo, "report", session)
    assert table.returncode == 0 and "in window" in table.stdout

    doc = ctxagent_run(repo, "doctor", session, "--json", env={"CTXAGENT_MODEL": "openai:gpt-5.4-mini"})
    checks = {c["check"]: c for c in json.loads(doc.stdout)}
    assert checks["per-step trimming"]["status"] == "ok"
    assert checks["offline tokenizer"]["status"] == "ok"
    assert checks["memory database"]["status"] == "ok" and "integrity_check: ok" in checks["memory database"]["detail"]
    assert checks["log integrity"]["status"] == "ok"

    before = read_session(repo, session)
    comp = ctxagent_run(repo, "compact", session, "--focus", "keep the SQLite decision", env={"CTXAGENT_MODEL": "openai:gpt-5.4-mini", "OPENAI_BASE_URL": "http://127.0.0.1:9"})
    assert comp.returncode == 0, comp.stderr
    assert "originals kept" in comp.stdout
    after = read_session(repo, session)
    assert after[: len(before)] == before  # nothing rewritten
    compaction = [e for e in after if e["kind"] == "compaction"][-1]["data"]
    assert compaction["method"] == "extractive" and compaction["focus"] == "keep the SQLite decision"
    assert "Decisions" in compaction["summary"] and "SQLite" in compaction["summary"]
    doc2 = json.loads(ctxagent_run(repo, "doctor", session, "--json").stdout)
    assert next(c for c in doc2 if c["check"] == "compactions")["status"] == "ok"

    cfg = ctxagent_run(repo, "config", env={"OPENAI_API_KEY": "sk-proj-abcdefghijklmnopqrstuvwxyz123456"})
    assert cfg.returncode == 0
    shown = json.loads(cfg.stdout)
    assert "abcdefghijklmnop" not in cfg.stdout and "redacted" in shown["openai_api_key"]
    lst = ctxagent_run(repo, "sessions")
    assert session in lst.stdout
