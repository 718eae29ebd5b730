"""Family: git config tricks (issue 19, Critical 1). The root is never git's choice, and no planted
program runs through any git command of ctxagent.

For every trick of the corpus: the root is the folder that holds `.git` (or the run is refused
with both paths named, when the repository moves its work tree), every file tool and git view and
the checkpoints run without a planted program leaving its marker, nothing outside the repository
is read or written, and plain git on the same repository does run the program (the attack is real).
"""

from __future__ import annotations

import os
import subprocess

import pytest
from corpus import GIT_TRICKS, MOVES_THE_ROOT, Victim, git, plain_repo
from ctxagent.agent.checkpoints.store import Checkpoints
from ctxagent.agent.session import find_repo_root
from ctxagent.context.errors import StateDirError
from ctxagent.context.floor.gitsafe import GitConfigRefused, GitLocationError, open_git, run_git
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext

REG = make_registry()
INERT = sorted(set(GIT_TRICKS) - MOVES_THE_ROOT)
TOOL_CALLS = [
    ("read_file", {"path": "app.py"}), ("read_file", {"path": ".ssh/id_rsa"}), ("read_file", {"path": "missing.py"}),
    ("list_files", {}), ("grep", {"pattern": "HI|hello"}), ("git_status", {}), ("git_diff", {}),
    ("git_diff", {"path": "app.py"}), ("write_file", {"path": ".bashrc", "content": "pwned\n"}),
    ("edit_file", {"path": "notes.txt", "old_text": "hello", "new_text": "bye"}),
]


@pytest.mark.parametrize("trick", sorted(MOVES_THE_ROOT))
def test_a_moved_work_tree_is_refused_naming_both_paths(victim: Victim, trick: str) -> None:
    repo = GIT_TRICKS[trick](victim)
    with pytest.raises(GitLocationError) as exc:
        find_repo_root(repo)
    assert str(repo) in str(exc.value) and isinstance(exc.value, StateDirError)
    with pytest.raises(GitLocationError):
        find_repo_root(repo / "sub" if (repo / "sub").exists() else repo)
    assert victim.escaped() == []


@pytest.mark.parametrize("trick", INERT)
def test_the_root_is_the_folder_that_holds_git(victim: Victim, trick: str) -> None:
    repo = GIT_TRICKS[trick](victim)
    (repo / "pkg" / "deep").mkdir(parents=True)
    assert find_repo_root(repo) == repo
    assert find_repo_root(repo / "pkg" / "deep") == repo
    assert victim.escaped() == []


@pytest.mark.parametrize("trick", sorted(GIT_TRICKS))
def test_no_tool_runs_a_planted_program_or_leaves_the_repository(victim: Victim, trick: str) -> None:
    repo = GIT_TRICKS[trick](victim)
    outputs = []
    for name, args in TOOL_CALLS:
        r = REG.run(name, args, ToolContext(root=repo, config={"grep_engine": "python"} if name == "grep" else {}))
        outputs.append(r.content)
    assert victim.escaped() == [], (trick, outputs)
    assert not victim.leaked(*outputs)
    if trick not in MOVES_THE_ROOT:
        assert "app.py" in outputs[3]  # list_files still works
        assert "print('HI')" in outputs[0]


@pytest.mark.parametrize("trick", INERT)
def test_checkpoints_run_no_planted_program(victim: Victim, trick: str) -> None:
    repo = GIT_TRICKS[trick](victim)
    cps = Checkpoints(repo)
    try:
        cps.snapshot("s1", 1, 0)
        (repo / "app.py").write_text("print('edit')\n")
        cps.mark_turn_end("s1", 1, ["app.py"])
    except Exception as exc:  # a refusal is fine (a clear error); a program that ran is not
        assert "Traceback" not in str(exc)
    assert victim.escaped() == []


@pytest.mark.parametrize("trick", INERT)
def test_no_git_command_honours_the_repository_config(victim: Victim, trick: str) -> None:
    """Every git command ctxagent builds (gitsafe), transport included: no marker, and the work tree
    is the one named, whatever core.worktree says."""
    repo = GIT_TRICKS[trick](victim)
    try:
        user = open_git(repo)
    except GitConfigRefused as exc:  # includes: refused outright, git never runs there
        assert "include" in str(exc) and trick.startswith("include")
        assert victim.marks_left() == []
        return
    assert user is not None and user.work_tree == repo
    for args in (["status", "--porcelain"], ["diff"], ["add", "--dry-run", "-A"], ["ls-remote", "origin"],
                 ["log", "--show-signature", "-1"], ["commit", "--dry-run", "-a"]):
        run_git(args, repo=user, timeout=60)
    assert run_git(["rev-parse", "--show-toplevel"], repo=user).stdout.decode().strip() == str(repo)
    assert victim.marks_left() == []


PLAIN_GIT = {  # how plain git (without ctxagent's settings) falls for each trick
    "core.fsmonitor": ["status"], "filters": ["status"], "attribute-drivers": ["diff"],
    "sshCommand-and-programs": ["ls-remote", "origin"], "includeIf": ["status"],
}


@pytest.mark.parametrize("trick", sorted(PLAIN_GIT))
def test_plain_git_does_run_the_planted_program(victim: Victim, trick: str) -> None:
    """The corpus is real: the same repository makes plain git run the program."""
    repo = GIT_TRICKS[trick](victim)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", *PLAIN_GIT[trick]], cwd=repo, env=env, capture_output=True, timeout=60, check=False,
                   stdin=subprocess.DEVNULL)
    assert victim.marks_left() != []


def test_plain_git_takes_the_victims_home_as_the_work_tree(victim: Victim) -> None:
    repo = GIT_TRICKS["core.worktree"](victim)
    assert git(repo, "rev-parse", "--show-toplevel").strip() == str(victim.home)


def test_a_linked_work_tree_and_a_submodule_style_gitdir_keep_their_root(victim: Victim) -> None:
    """The legitimate uses of a `.git` file: `git worktree add`, and a repository whose database
    is elsewhere but points back here."""
    repo = plain_repo(victim)
    linked = repo.parent / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    git(repo, "config", "core.fsmonitor", victim.mark("fsmonitor"))  # after: plain git's checkout would run it
    assert find_repo_root(linked) == linked
    r = REG.run("git_status", {}, ToolContext(root=linked))
    assert not r.is_error, r.content
    assert victim.marks_left() == []
