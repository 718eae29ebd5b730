"""`ctxagent -p "/name args"`: the real console script expands a custom command, prints the expansion
to stderr, and sends it — through the real anthropic SDK and the scripted server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from ctxagent.context.floor.state_paths import user_config_dir

MODEL = "anthropic:claude-sonnet-5-5"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    (r / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    subprocess.run(["git", "init", "-q"], cwd=r, check=True)
    return r


def test_headless_expands_prints_and_sends(repo: Path, scripted_server, ctxagent_run, read_session) -> None:  # type: ignore[no-untyped-def]
    folder = repo / ".ctxagent" / "commands"
    folder.mkdir(parents=True)
    (folder / "review.md").write_text("---\ndescription: Review\n---\nReview @$1 for 错误 ($2).\n", encoding="utf-8")
    (user_config_dir() / "commands").mkdir(parents=True)
    (user_config_dir() / "commands" / "help.md").write_text("user help: $ARGUMENTS", encoding="utf-8")
    srv = scripted_server([{"text": "add subtracts"}, {"text": "user help seen"}])
    # a project command runs headless only once the user confirmed it: refused, nothing sent, no session
    refused = ctxagent_run(repo, "-p", "/review calc.py sign", "--model", MODEL, "--base-url", srv.url)
    assert refused.returncode == 2 and "you have not confirmed it; nothing was sent" in refused.stderr
    assert "ctxagent trust" in refused.stderr and "Review @$1 for 错误 ($2)." in refused.stderr  # the file, shown
    assert srv.requests() == [] and not (repo / ".ctxagent" / "sessions").exists()
    trusted = ctxagent_run(repo, "trust")
    assert trusted.returncode == 0 and "/project:review" in trusted.stdout and "Review @$1" in trusted.stdout
    out = ctxagent_run(repo, "-p", "/review calc.py sign", "--model", MODEL, "--base-url", srv.url, "--output", "json")
    assert out.returncode == 0, out.stderr
    assert "/project:review" in out.stderr and "Review @calc.py for 错误 (sign)." in out.stderr
    body = json.dumps(srv.requests()[-1]["body"]["messages"], ensure_ascii=False)
    assert "Review @calc.py for 错误 (sign)." in body and "return a - b" in body  # the mention was attached
    assert "/review" not in body
    session = json.loads(out.stdout)["session"]
    users = [e["data"] for e in read_session(repo, session) if e["kind"] == "user"]
    assert [u["text"] for u in users] == ["Review @calc.py for 错误 (sign)."]
    assert users[0]["template"]["name"] == "project:review" and users[0]["template"]["typed"] == "calc.py sign"

    # a user command named like a headless-meaningless built-in still runs by its qualified name
    again = ctxagent_run(repo, "-p", "/user:help me", "--model", MODEL, "--base-url", srv.url)
    assert again.returncode == 0, again.stderr
    assert "user help: me" in json.dumps(srv.requests()[-1]["body"]["messages"])


def test_an_unknown_slash_prompt_is_sent_as_typed(repo: Path, scripted_server, ctxagent_run) -> None:  # type: ignore[no-untyped-def]
    srv = scripted_server([{"text": "ok"}])
    out = ctxagent_run(repo, "-p", "/etc/hosts is odd", "--model", MODEL, "--base-url", srv.url)
    assert out.returncode == 0, out.stderr
    assert "expands to" not in out.stderr
    assert "/etc/hosts is odd" in json.dumps(srv.requests()[-1]["body"]["messages"])
