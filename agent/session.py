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
from ctxagent.context.history import SUBAGENTS_FOLDER, SessionLog


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
        for exact in (sessions_dir(root) / f"{ref}.jsonl", sessions_dir(root) / SUBAGENTS_FOLDER / f"{ref}.jsonl"):
            if exact.exists():  # a sub-agent's log (agent/subagents/) is found by its exact id
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


def session_model(log: SessionLog) -> str | None:
    """The model the session last ran with: its newest step's (`context_report.model`, where a /model
    switch shows from the next step on), else the one its `session_start` names; None when neither does.
    (A stand-in for the session's endpoint — model and base URL — until the log records both.)"""
    for ev in reversed(log.events):
        if ev.kind == "context_report" and ev.context_report.model:
            return ev.context_report.model
    start = next((e for e in log.events if e.kind == "session_start"), None)
    model = start.as_(SessionStartData).model if start is not None else ""
    return model or None


def with_session_model(config: Config, log: SessionLog) -> Config:
    """`config` on the resumed session's own model (`session_model`), a copy, never changed in place:
    the caller's config may be another session's. Unchanged when the log names no model."""
    model = session_model(log)
    if not model or model == config.model:
        return config
    return config.model_copy(update={"model": model}, deep=True)


@dataclass
class Session:
    root: Path
    state_dir: Path
    config: Config
    log: SessionLog

    @property
    def id(self) -> str:
        return self.log.session_id


def open_session(root: Path, config: Config, resume: str | None = None, *, parent: str | None = None,
                 keep_model: bool = False) -> Session:
    """A new session, or the one `resume` names ("" = the latest).

    `keep_model`: a resumed session keeps its own model (`session_model`: the one it last ran with, a
    /model switch included) — what `--resume` / `--continue` and the app's /resume ask for unless the
    command line names a model. The config is copied for it, never changed: the caller's config may
    be another session's.

    A new session's log is pending until its first user message creates the file (SessionLog's
    `pending_until`): a start that fails (a config error, the set-up screen, a quit before typing)
    leaves no empty session behind.
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
            log = SessionLog(path=path, session_id=session_id, sanitize=sanitize, pending_until=UserData.KIND)
            log.append(SessionStartData(session=log.session_id, model=config.model or "", cwd=str(root), parent=parent))
    except OSError as exc:  # a read-only `.ctxagent/`, a full disk
        raise StateDirError(f"cannot write the session log in {state / 'sessions'}: {describe_os_error(exc)}") from exc
    if resume is not None and keep_model:
        config = with_session_model(config, log)
    return Session(root=root, state_dir=state, config=config, log=log)
