"""Issue 30's "Done when", headless: a program that git would run implicitly, written by an approved
sandboxed command in a real `ctxagent -p` session, never runs — proven by the user's own `git
status` and `git commit` after the session, with no ctxagent involved.

The loopback scripted model decides the tool calls: a `run_tests` whose `conftest.py` plants an
fsmonitor in an uninitialised submodule folder and a line in husky's pre-commit hook (the issue's
own case: a test run approved as pytest), and a `shell` call that makes a new nested repository
with an fsmonitor; and, in an unpacked tarball (no `.git`), `git init .` with an fsmonitor. Each
session runs sandboxed and, as the control, with `--sandbox off`, where every marker appears.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from attack_helpers import headless, no_traceback
from ctxagent.context.errors import SandboxUnavailableError
from ctxagent.tools.sandbox import DEFAULT_POLICY, find_bwrap

CONFTEST = """
import subprocess
subprocess.run(
    "git init -q vendor/lib; git -C vendor/lib config core.fsmonitor 'touch {marks}/submodule-fsmonitor'; "
    "echo 'touch {marks}/husky-pre-commit' >> .husky/pre-commit",
    shell=True)
"""


@pytest.fixture
def bwrap() -> str:
    try:
        return find_bwrap(DEFAULT_POLICY)
    except SandboxUnavailableError as exc:
        pytest.skip(f"bubblewrap cannot run on this machine: {exc}")


@pytest.fixture
def user(tmp_path: Path) -> dict[str, str]:
    """The user's own shell afterwards: a home with an ordinary git config, nothing of ctxagent's."""
    home = tmp_path / "user-home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = u\n\temail = u@e.invalid\n[init]\n\tdefaultBranch = main\n"
                                     "[protocol \"file\"]\n\tallow = always\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k not in ("EDITOR", "VISUAL", "PAGER")}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", XDG_CONFIG_HOME=str(home / ".config"))
    return env


def git(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def _husky_repo(env: dict[str, str], base: Path, marks: Path) -> Path:
    """A repository as `npm install` leaves it with husky 9, and an uninitialised submodule."""
    lib = base / "lib"
    lib.mkdir(parents=True)
    git(env, lib, "init", "-q")
    git(env, lib, "commit", "-q", "--allow-empty", "-m", "lib")
    repo = base / "repo"
    repo.mkdir()
    (repo / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    (repo / "conftest.py").write_text(CONFTEST.format(marks=marks))
    (repo / ".husky/_").mkdir(parents=True)
    (repo / ".husky/_/pre-commit").write_text("#!/bin/sh\nsh .husky/pre-commit\n")
    (repo / ".husky/_/pre-commit").chmod(0o755)
    (repo / ".husky/pre-commit").write_text("echo lint\n")
    for args in (["init", "-q"], ["submodule", "add", "-q", str(lib), "vendor/lib"], ["add", "-A"], ["commit", "-qm", "init"],
                 ["submodule", "deinit", "-q", "-f", "vendor/lib"], ["config", "core.hooksPath", ".husky/_"]):
        out = git(env, repo, *args)
        assert out.returncode == 0, out.stderr
    return repo


def _script(*commands: tuple[str, str]) -> list[dict]:
    return [*({"tool_calls": [{"name": tool, "arguments": {"command": command}}]} for tool, command in commands),
            {"text": "done"}]


def _tool_results(srv) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(str(m["content"]) for m in srv.requests[-1]["body"]["messages"] if m["role"] == "tool")


@pytest.mark.usefixtures("bwrap")
@pytest.mark.parametrize("sandbox", ["workspace-write", "off"])
def test_what_a_session_planted_never_runs_at_the_users_git(tmp_path: Path, servers, user: dict[str, str],
                                                            sandbox: str) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    repo = _husky_repo(user, tmp_path, marks)
    tests = f"{sys.executable} -m pytest -q -p no:cacheprovider test_ok.py"
    nested = f"git init -q tools/new && git -C tools/new config core.fsmonitor 'touch {marks}/nested-fsmonitor'"
    srv = servers(_script(("run_tests", tests), ("shell", nested)))
    out = headless(repo, srv.base_url, "run the tests", "--yes", "--sandbox", sandbox)
    no_traceback(out)
    seen = _tool_results(srv)
    assert out.returncode == 0 and "1 passed" in seen, out.stderr

    tarball = tmp_path / "unpacked"
    tarball.mkdir()
    (tarball / "main.py").write_text("print('hi')\n")
    srv = servers(_script(("shell", f"git init -q . && git config core.fsmonitor 'touch {marks}/tarball-fsmonitor'")))
    out = headless(tarball, srv.base_url, "set up git", "--yes", "--sandbox", sandbox)
    no_traceback(out)
    assert out.returncode == 0, out.stderr

    # the user, afterwards, in their own shell: no ctxagent involved
    assert git(user, repo, "status").returncode == 0
    git(user, repo, "commit", "-qm", "mine", "--allow-empty")
    git(user, repo / "tools/new", "status")  # a prompt's git segment in the folder the session made
    git(user, tarball, "status")
    ran = sorted(p.name for p in marks.iterdir())
    if sandbox == "off":  # the control: unsandboxed, the same session plants all four
        assert ran == ["husky-pre-commit", "nested-fsmonitor", "submodule-fsmonitor", "tarball-fsmonitor"], ran
        return
    assert ran == [], ran
    assert not (repo / "vendor/lib/.git").exists() and not (tarball / ".git").exists()
    assert (repo / ".husky/pre-commit").read_text() == "echo lint\n"
    assert (repo / "tools/new/.git.ctxagent-quarantine").is_dir()  # moved aside, not deleted, and said
    assert "tools/new/.git appeared while a sandboxed command ran" in seen and "rename it back" in seen, seen
