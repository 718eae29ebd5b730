"""A session: the repository, its `.ctxagent/` state folder, the effective config and the log."""

from __future__ import annotations

import secrets
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ctxagent.agent.config import Config
from ctxagent.context.errors import HistoryError, StateDirError
from ctxagent.context.events import SessionStartData, UserData
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


def open_session(root: Path, config: Config, resume: str | None = None, *, parent: str | None = None) -> Session:
    """A new session, or the one `resume` names ("" = the latest).

    A new session's log is pending until its first user message creates the file (SessionLog's
    `pending_until`): a start that fails (a config error, the set-up screen, a quit before typing)
    leaves no empty session behind. A resumed one is locked as it is opened (`SessionLog.open`): an
    idle app on `--continue` and a `ctxagent -p --continue` cannot both write it — the second gets a
    HistoryError naming the first.
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
            log = SessionLog.open(resolve_session(root, resume), sanitize=sanitize)
        else:
            session_id = new_session_id()
            path = sessions_dir(root) / f"{session_id}.jsonl"
            if path.exists():
                raise HistoryError(f"session {session_id} already exists at {path}")
            # The file comes with the first message; whether it can be written is known now, so a
            # read-only `.ctxagent/` is a clear error at the start, not mid-turn. (Nothing is left.)
            tempfile.TemporaryFile(dir=path.parent).close()
            log = SessionLog(path=path, session_id=session_id, sanitize=sanitize, pending_until=UserData.KIND)
            log.append(SessionStartData(session=log.session_id, model=config.model or "", cwd=str(root), parent=parent))
    except OSError as exc:  # a read-only `.ctxagent/`, a full disk
        raise StateDirError(f"cannot write the session log in {state / 'sessions'}: {describe_os_error(exc)}") from exc
    return Session(root=root, state_dir=state, config=config, log=log)
