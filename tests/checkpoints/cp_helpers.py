"""Helpers: the user's git state, and a small driver that plays the agent loop's part for checkpoints."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ctxagent.agent.checkpoints.rewind import RewindMode, rewind
from ctxagent.agent.checkpoints.store import Checkpoints, ConfirmOverwrite, RewindResult, checkpoints_for_log
from ctxagent.context.events import AssistantData, CheckpointData, SessionStartData, ToolResultData, UserData
from ctxagent.context.history import SessionLog

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test User",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test User",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_OPTIONAL_LOCKS": "0",  # our own `git status` must not refresh the index we compare
}


def git(root: Path, *args: str, check: bool = True) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_ENV)
    if "GIT_CONFIG_GLOBAL" in os.environ:
        env["GIT_CONFIG_GLOBAL"] = os.environ["GIT_CONFIG_GLOBAL"]
    out = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, check=check)
    return out.stdout.decode("utf-8", "surrogateescape")


@dataclass
class UserGitState:
    status: str
    stash: str
    head: str
    head_ref: str
    branches: str
    refs: str
    index: bytes
    config: bytes
    hooks: list[str]


def user_git_state(root: Path) -> UserGitState:
    gd = root / ".git"
    return UserGitState(
        status=git(root, "status", "--porcelain", "--untracked-files=all"),
        stash=git(root, "stash", "list"),
        head=git(root, "rev-parse", "HEAD"),
        head_ref=git(root, "symbolic-ref", "-q", "HEAD", check=False),
        branches=git(root, "branch", "-a", "-v"),
        refs=git(root, "for-each-ref"),
        index=(gd / "index").read_bytes(),
        config=(gd / "config").read_bytes(),
        hooks=sorted(p.name for p in (gd / "hooks").iterdir()),
    )


@dataclass
class FakeLoop:
    """Does what the agent loop does around file-changing tools, nothing more."""

    root: Path
    log: SessionLog
    cps: Checkpoints
    turn: int = 0
    _snapped: bool = False
    files: list[str] = field(default_factory=list)

    def user(self, text: str) -> int:
        self.turn += 1
        self._snapped = False
        self.files = []
        return self.log.append(UserData(text=text, turn=self.turn)).id

    def change(self, fn: Callable[[Path], None], *files: str) -> None:
        if not self._snapped:
            commit = self.cps.snapshot(self.log.session_id, self.turn, len(self.log.events))
            self.log.append(CheckpointData(turn=self.turn, commit=commit))
            self._snapped = True
        fn(self.root)
        self.files.extend(files)
        self.log.append(ToolResultData(call_id=f"c{len(self.log.events)}", name="edit_file", content="ok",
                                       is_error=False, duration_ms=1, meta={"files": list(files)}))

    def reply(self, text: str = "done") -> None:
        self.log.append(AssistantData(text=text, tool_calls=[], stop_reason="end_turn", step=1))
        if self._snapped:
            self.cps.mark_turn_end(self.log.session_id, self.turn, self.files)

    def rewind(self, turn: int, mode: RewindMode = "both", confirm: ConfirmOverwrite | None = None) -> RewindResult:
        """The one rewind (agent/checkpoints/rewind.py) with this loop's checkpoints."""
        return rewind(self.log, turn, mode, checkpoints=self.cps, confirm_overwrite=confirm)


def rewind_log(log: SessionLog, turn: int, mode: RewindMode = "both", confirm: ConfirmOverwrite | None = None) -> RewindResult:
    """The one rewind, with the checkpoints of the repository the log belongs to."""
    return rewind(log, turn, mode, checkpoints=checkpoints_for_log(log), confirm_overwrite=confirm)


OPEN_LOGS: list[SessionLog] = []  # closed after each test (tests/checkpoints/conftest.py)


def make_loop(root: Path, session_id: str = "20250101-000000-abc123") -> FakeLoop:
    state = root / ".ctxagent"
    log = SessionLog.create(state / "sessions", session_id)
    OPEN_LOGS.append(log)
    log.append(SessionStartData(session=session_id, model="test:model", cwd=str(root)))
    return FakeLoop(root=root, log=log, cps=Checkpoints(root, state))


def write(root: Path, rel: str, data: str | bytes, mode: int | None = None) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        p.write_bytes(data)
    else:
        p.write_text(data, encoding="utf-8")
    if mode is not None:
        p.chmod(mode)
