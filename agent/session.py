"""A session: the repository, its `.ctxagent/` state folder, the effective config and the log."""

from __future__ import annotations

import io
import os
import secrets
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxagent.agent.config import Config
from ctxagent.context.errors import HistoryError, StateDirError
from ctxagent.context.floor.gitsafe import toplevel
from ctxagent.context.floor.sanitize import Sanitizer
from ctxagent.context.floor.state_paths import describe_os_error, ensure_state_dir, project_state_dir
from ctxagent.context.history import SessionLog


def find_repo_root(cwd: Path) -> Path:
    """The git top-level containing `cwd`, or `cwd` itself outside a repository."""
    cwd = cwd.resolve()
    return toplevel(cwd) or cwd


def sessions_dir(root: Path) -> Path:
    return project_state_dir(root) / "sessions"


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def list_sessions(root: Path) -> list[Path]:
    """Session logs, oldest first (by modification time, then name)."""
    d = sessions_dir(root)
    if not d.is_dir():
        return []
    return sorted(d.glob("*.jsonl"), key=lambda p: (p.stat().st_mtime, p.name))


def resolve_session(root: Path, ref: str | None) -> Path:
    """A session by id, unique id prefix, or path; the latest when `ref` is empty or "--last"."""
    if ref and ref not in ("--last", "last"):
        p = Path(ref)
        if p.suffix == ".jsonl" and p.exists():
            return p
        exact = sessions_dir(root) / f"{ref}.jsonl"
        if exact.exists():
            return exact
        matches = [s for s in list_sessions(root) if s.stem.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise HistoryError(f"session id {ref!r} is ambiguous: {', '.join(m.stem for m in matches)}")
        raise HistoryError(f"no session {ref!r} under {sessions_dir(root)}")
    all_sessions = list_sessions(root)
    if not all_sessions:
        raise HistoryError(f"no sessions yet under {sessions_dir(root)}")
    return all_sessions[-1]


@dataclass
class Session:
    root: Path
    state_dir: Path
    config: Config
    log: SessionLog

    @property
    def id(self) -> str:
        return self.log.session_id


class PendingSessionLog(SessionLog):
    """A new session's log that reaches the disk with its first user message.

    Until then its events (session_start, system_prompt, ...) are kept in memory, so a start that
    fails (a config error, the set-up screen, a quit before typing) leaves no empty session behind.
    It is a SessionLog in every other way; `pending` says whether the file exists yet.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fh = io.StringIO()  # SessionLog.append writes here until the first user message

    @property
    def pending(self) -> bool:
        return isinstance(self._fh, io.StringIO)

    def append(self, kind: Any, expect_id: int | None = None, **data: Any):  # noqa: ANN201 - SessionLog's Event
        ev = super().append(kind, expect_id, **data)
        if self.pending and ev.kind == "user":
            self._materialize()
        return ev

    def _materialize(self) -> None:
        buffered = self._fh.getvalue()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.lock()  # the write lock comes with the file
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        fh = os.fdopen(fd, "a", encoding="utf-8")
        fh.write(buffered)
        fh.flush()
        self._fh = fh

    def sync(self) -> None:
        if not self.pending:
            super().sync()

    def close(self) -> None:
        if self.pending:
            return  # nothing worth keeping was said: no file
        super().close()


def open_session(root: Path, config: Config, resume: str | None = None, *, parent: str | None = None) -> Session:
    """A new session, or the one `resume` names ("" = the latest).

    A new session's log is a PendingSessionLog: its file is created by the first user message.
    """
    root = root.resolve()
    state = ensure_state_dir(root)
    try:
        (state / "sessions").mkdir(exist_ok=True)
    except OSError as exc:
        raise StateDirError(f"cannot create {state / 'sessions'}: {describe_os_error(exc)}") from exc
    sanitize = Sanitizer(config.secrets())
    try:
        if resume is not None:
            log = SessionLog.load(resolve_session(root, resume), sanitize=sanitize)
        else:
            session_id = new_session_id()
            path = sessions_dir(root) / f"{session_id}.jsonl"
            if path.exists():
                raise HistoryError(f"session {session_id} already exists at {path}")
            # The file comes with the first message; whether it can be written is known now, so a
            # read-only `.ctxagent/` is a clear error at the start, not mid-turn. (Nothing is left.)
            tempfile.TemporaryFile(dir=path.parent).close()
            log = PendingSessionLog(path=path, session_id=session_id, sanitize=sanitize)
            log.append("session_start", session=log.session_id, model=config.model or "", cwd=str(root), parent=parent)
    except OSError as exc:  # a read-only `.ctxagent/`, a full disk
        raise StateDirError(f"cannot write the session log in {state / 'sessions'}: {describe_os_error(exc)}") from exc
    return Session(root=root, state_dir=state, config=config, log=log)
