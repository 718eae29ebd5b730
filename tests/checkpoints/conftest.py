"""Fixtures for checkpoint tests: a real git repository with history, a branch, a stash and ignore rules."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# --import-mode=importlib does not put test folders on sys.path; cp_helpers.py needs it.
sys.path.insert(0, str(Path(__file__).parent))


def git(root: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="Test User", GIT_AUTHOR_EMAIL="test@example.invalid",
               GIT_COMMITTER_NAME="Test User", GIT_COMMITTER_EMAIL="test@example.invalid")
    subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, check=True)


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    """A git repository with history, a second branch, a stash entry and ignore rules."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text("*.log\nbuild/\n", encoding="utf-8")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('v1')\n", encoding="utf-8")
    (root / "README.md").write_text("# demo\n", encoding="utf-8")
    (root / "run.sh").write_text("#!/bin/sh\necho run\n", encoding="utf-8")
    (root / "run.sh").chmod(0o755)
    (root / "doomed.txt").write_text("will be deleted\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    git(root, "branch", "feature")
    (root / "README.md").write_text("# demo\nstashed line\n", encoding="utf-8")
    git(root, "stash", "-q")
    return root


@pytest.fixture(autouse=True)
def _close_logs() -> Iterator[None]:
    yield
    from cp_helpers import OPEN_LOGS

    while OPEN_LOGS:
        OPEN_LOGS.pop().close()
