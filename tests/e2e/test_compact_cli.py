"""`ctxagent compact` (issue 24 item 8): with `summary_model = "none"` it needs no key and no
provider SDK; a summary model that answers garbage or 401 falls back to the extractive summary and
says so — in the compaction record's note, on stderr, and in `ctxagent report`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

MODEL = "openai:gpt-5.4-mini"


def _session(repo: Path, scripted_server, run_ctxagent, then: list[dict] | None = None) -> tuple[str, str]:  # noqa: ANN001
    # `then`: what the session's own endpoint answers next — `ctxagent compact --base-url` summarizes there
    srv = scripted_server([*({"text": f"answer {i}. We decided to use SQLite."} for i in range(3)), *(then or [])])
    session = None
    for t, prompt in enumerate(["The pricing bug: 3 seats are billed as 30.", "rename the helpers", "and the docs"]):
        args = ["-p", prompt, "--model", MODEL, "--base-url", srv.url, "--output", "json", *(["--resume", session] if session else [])]
        out = run_ctxagent(repo, *args)
        assert out.returncode == 0, (t, out.stderr)
        session = json.loads(out.stdout)["session"]
    assert session
    return session, srv.url


def _user_config(text: str) -> None:
    home = Path(os.environ["CTXAGENT_HOME"]) / "config"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def test_compact_with_summary_model_none_needs_no_key_and_no_sdk(repo: Path, scripted_server, ctxagent_run, read_session) -> None:  # noqa: ANN001
    session, _ = _session(repo, scripted_server, ctxagent_run)
    _user_config('summary_model = "none"\n')
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    code = ("import json, sys\nfrom ctxagent.tui.cli.main import main\n"
            f"rc = main(['compact', {session!r}, '--focus', 'keep the pricing bug'])\n"
            "print(json.dumps({'rc': rc, 'sdks': sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'anthropic'))}))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"rc": 0, "sdks": []}, out.stderr
    assert "API key" not in out.stderr and "note:" not in out.stderr  # the user's choice: nothing to warn about
    compaction = [e for e in read_session(repo, session) if e["kind"] == "compaction"][-1]["data"]
    assert compaction["method"] == "extractive" and not compaction.get("note")
    assert "[turn 1, by the user] The pricing bug: 3 seats are billed as 30." in compaction["summary"]


def _fallback(repo: Path, scripted_server, ctxagent_run, read_session, answer: dict) -> tuple[subprocess.CompletedProcess[str], dict, str]:  # noqa: ANN001, E501
    session, url = _session(repo, scripted_server, ctxagent_run, then=[answer])
    _user_config(f'summary_model = "{MODEL}"\n')
    # the URL the session ran against, named by the user (a session log never chooses where a key goes)
    out = ctxagent_run(repo, "compact", session, "--base-url", url)
    assert out.returncode == 0, out.stderr
    compaction = [e for e in read_session(repo, session) if e["kind"] == "compaction"][-1]["data"]
    report = ctxagent_run(repo, "report", session)
    assert report.returncode == 0, report.stderr
    return out, compaction, report.stdout


def test_a_summary_model_answering_garbage_falls_back_and_says_so(repo: Path, scripted_server, ctxagent_run, read_session) -> None:  # noqa: ANN001
    out, compaction, report = _fallback(repo, scripted_server, ctxagent_run, read_session, {"text": "Sure, here you go: it went fine."})
    assert compaction["method"] == "extractive"
    assert "not a usable summary" in compaction["note"] and "extractive summary was used" in compaction["note"]
    assert "not a usable summary" in out.stderr and "(extractive summary" in out.stdout
    assert "not a usable summary" in report


def test_a_summary_model_answering_401_falls_back_and_says_so(repo: Path, scripted_server, ctxagent_run, read_session) -> None:  # noqa: ANN001
    out, compaction, report = _fallback(repo, scripted_server, ctxagent_run, read_session, {"fault": "401"})
    assert compaction["method"] == "extractive"
    assert "the summary model failed" in compaction["note"]
    assert "the summary model failed" in out.stderr and "the summary model failed" in report
