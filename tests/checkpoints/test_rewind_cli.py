"""`ctxagent rewind` as a real subprocess (the installed console script) on a real repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cp_helpers import FakeLoop, make_loop, user_git_state, write
from ctxagent.context.history import SessionLog

BIN = Path(sys.executable).with_name("ctxagent")


def ctxagent(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONIOENCODING"] = "utf-8"
    return subprocess.run([str(BIN), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, encoding="utf-8")


def two_turn_session(repo: Path) -> FakeLoop:
    loop = make_loop(repo)
    loop.user("第一轮：改 app")
    loop.change(lambda r: write(r, "src/app.py", "print('turn 1')\n"), "src/app.py")
    loop.reply()
    loop.user("turn two: add a module")
    loop.change(lambda r: write(r, "src/extra.py", "EXTRA = 1\n"), "src/extra.py")
    loop.change(lambda r: write(r, "README.md", "# readme by the agent\n"), "README.md")
    loop.reply()
    loop.log.close()
    loop.cps.close()
    return loop


def test_cli_list_then_rewind_both_by_session_id(repo: Path) -> None:
    loop = two_turn_session(repo)
    sid = loop.log.session_id
    listed = ctxagent(repo, "rewind", sid, "--list")
    assert listed.returncode == 0, listed.stderr
    assert "第一轮：改 app" in listed.stdout and "turn two: add a module" in listed.stdout
    assert "2 files changed, +2 -1" in listed.stdout and "A src/extra.py" in listed.stdout

    before_git = user_git_state(repo)
    done = ctxagent(repo, "rewind", sid, "--to", "2")
    assert done.returncode == 0, done.stderr
    assert "deleted  src/extra.py" in done.stdout and "restored README.md" in done.stdout
    assert not (repo / "src/extra.py").exists()
    assert (repo / "README.md").read_text() == "# demo\n"
    assert (repo / "src/app.py").read_text() == "print('turn 1')\n"
    log = SessionLog.load(loop.log.path)
    assert log.events[-1].kind == "rewind"
    assert [it.data["text"] for it in log.view() if getattr(it, "kind", "") == "user"] == ["第一轮：改 app"]
    # Only the working tree changed; the user's index, HEAD, branches and stash did not.
    after_git = user_git_state(repo)
    assert (after_git.index, after_git.head, after_git.branches, after_git.stash) == (
        before_git.index, before_git.head, before_git.branches, before_git.stash)


def test_cli_skips_outside_changes_unless_forced_and_json_output(repo: Path, tmp_path: Path) -> None:
    loop = two_turn_session(repo)
    write(repo, "README.md", "# edited by the user after the agent\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # By path to the .jsonl: from another directory it is not one of that directory's sessions (a log
    # names the folder a rewind writes to, so only this repository's logs are opened) ...
    refused = ctxagent(elsewhere, "rewind", str(loop.log.path), "--to", "1", "--code", "--json")
    assert refused.returncode == 2 and "is not one of this repository's sessions" in refused.stderr
    # ... from the repository, by path; code only.
    out = ctxagent(repo, "rewind", str(loop.log.path), "--to", "1", "--code", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["skipped"] == ["README.md"] and data["changed_outside"] == ["README.md"]
    assert sorted(data["files_restored"]) == ["src/app.py"] and data["files_deleted"] == ["src/extra.py"]
    assert data["conversation_to_id"] is None
    assert (repo / "README.md").read_text() == "# edited by the user after the agent\n"
    assert SessionLog.load(loop.log.path).events[-1].kind != "rewind"

    forced = ctxagent(repo, "rewind", loop.log.session_id[:12], "--to", "1", "--code", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "restored README.md" in forced.stdout
    assert (repo / "README.md").read_text() == "# demo\n"


def test_cli_conversation_only_and_errors(repo: Path) -> None:
    loop = two_turn_session(repo)
    conv = ctxagent(repo, "--cwd", str(repo), "rewind", "--to", "2", "--conversation")  # latest session
    assert conv.returncode == 0, conv.stderr
    assert (repo / "src/extra.py").exists()  # code untouched
    assert SessionLog.load(loop.log.path).events[-1].kind == "rewind"
    missing_turn = ctxagent(repo, "rewind", loop.log.session_id, "--to", "9")
    assert missing_turn.returncode == 2 and "no turn 9" in missing_turn.stderr
    missing_session = ctxagent(repo, "rewind", "nope", "--to", "1")
    assert missing_session.returncode == 2 and "nope" in missing_session.stderr
    no_turn = ctxagent(repo, "rewind", loop.log.session_id)
    assert no_turn.returncode == 2 and "--to" in no_turn.stderr
