"""A session: the repository, its `.ctxagent/` state folder, the effective config and the log — and the
endpoint its requests go to, as the log records it (`session_endpoint`, `record_endpoint`, `base_url_change`).

The log lives in the repository (untrusted input): a resume takes the session's model from it, never its
base URL — a log must not send the config's key elsewhere. When the two differ, the resumed session's
`notices` say so (`base_url_change`), and the app and headless runs show that line."""

from __future__ import annotations

import secrets
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ctxagent.agent.config import Config
from ctxagent.context.errors import CtxagentError, HistoryError, StateDirError
from ctxagent.context.events import PermissionModeData, SessionStartData, UserData
from ctxagent.context.floor.roots import find_repo_root as find_repo_root  # the one rule for the root
from ctxagent.context.floor.sanitize import Sanitizer
from ctxagent.context.floor.state_paths import (
    SUBAGENTS_FOLDER,
    check_state_dir,
    describe_os_error,
    ensure_state_dir,
    sessions_dir,
)
from ctxagent.context.history import Event, SessionLog


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def list_sessions(root: Path) -> list[Path]:
    """Session logs, oldest first (by modification time, then name); a state folder ctxagent did not
    make is refused first (check_state_dir), so a planted session is never listed nor resumed."""
    check_state_dir(root)
    d = sessions_dir(root)
    if not d.is_dir():
        return []
    return sorted(d.glob("*.jsonl"), key=lambda p: (p.stat().st_mtime, p.name))


def resolve_session(root: Path, ref: str | None) -> Path:
    """A session by id, unique id prefix, or path; the latest when `ref` is empty or "--last".

    Only this repository's logs: whatever `ref` names must lie in its `.ctxagent/sessions/` (a path
    inside it, a link resolved; an id never walks out with `..`). Any other file — a tracked "demo
    session", another repository's log — is refused (HistoryError), never read or written."""
    check_state_dir(root)
    if ref and ref not in ("--last", "last"):
        p = Path(ref)
        if p.suffix == ".jsonl" and p.exists():
            return _own_log(root, p, ref)
        for exact in (sessions_dir(root) / f"{ref}.jsonl", sessions_dir(root) / SUBAGENTS_FOLDER / f"{ref}.jsonl"):
            if exact.exists():  # a sub-agent's log (agent/subagents/) is found by its exact id
                return _own_log(root, exact, ref)
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


def _own_log(root: Path, path: Path, ref: str) -> Path:
    """`path`, when it is a log file inside this repository's sessions folder; else a HistoryError."""
    folder = sessions_dir(root).resolve()
    real = path.resolve()
    if not real.is_relative_to(folder) or real.suffix != ".jsonl" or not real.is_file():
        raise HistoryError(f"{ref!r} is not one of this repository's sessions: ctxagent opens only the logs in "
                           f"{sessions_dir(root)} (name one by its id, or by a path inside that folder)")
    return real


def is_subagent_log(root: Path, path: Path) -> str | None:
    """The parent session's id when the log at `path` is a sub-agent's (kept under `sessions/subagents/`,
    or its start names the parent's call); else None. Such a log is resumable only as a sub-agent's:
    its "user" message is the parent model's prompt, never the user's words."""
    start = _first_start(path)
    parent = str(start.get("parent") or "") or "?"
    if start.get("parent_call") or path.resolve().parent == (sessions_dir(root) / SUBAGENTS_FOLDER).resolve():
        return parent
    return None


MAX_START_BYTES = 1 << 20  # of a log's first line, read to tell a sub-agent's log


def _first_start(path: Path) -> dict[str, object]:
    """The data of the log's first event when it is its `session_start` (where every log begins); {} else."""
    from ctxagent.context.floor import bounded_json

    try:
        with path.open("rb") as fh:
            line = fh.readline(MAX_START_BYTES).decode("utf-8")
        event = bounded_json.loads(line, bounded_json.LOG_DEPTH)
    except (OSError, ValueError):
        return {}
    data = event.get("data") if isinstance(event, dict) and event.get("kind") == SessionStartData.KIND else None
    return data if isinstance(data, dict) else {}


def resume_target(root: Path, ref: str) -> Path:
    """The log `--resume REF` (`--continue`, /resume, ACP's session/load, `ctxagent compact`) may open for
    writing: one of this repository's own sessions (`resolve_session`), never a sub-agent's."""
    path = resolve_session(root, ref)
    parent = is_subagent_log(root, path)
    if parent is not None:
        raise HistoryError(f"session {path.stem} is a sub-agent's (started by session {parent}): it is not "
                           "resumed as your own, since its prompt was the parent model's, not yours; resume "
                           f"{parent} (ctxagent --resume {parent}), or read it with `ctxagent inspect {path.stem}`")
    return path


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
    notices: list[str] = field(default_factory=list)  # lines to show the user as it opens (a resume's)

    @property
    def id(self) -> str:
        return self.log.session_id


def open_session(root: Path, config: Config, resume: str | None = None, *, parent: str | None = None,
                 keep_model: bool = False, keep_mode: bool = False) -> Session:
    """A new session, or the one `resume` names ("" = the latest): one of this repository's own, never a
    sub-agent's (`resume_target`, checked before anything is created or locked).

    `keep_model`: a resumed session keeps its own model (`session_model`: the one it last ran with, a
    /model switch included) — what `--resume` / `--continue` and the app's /resume ask for unless the
    command line names a model. The config is copied for it, never changed: the caller's config may
    be another session's. `keep_mode`: it also keeps the permission mode it last ran under, unless that
    is more permissive than the config's (`with_session_mode`) — when the command line names no mode.

    A new session's log is pending until its first user message creates the file (SessionLog's
    `pending_until`): a start that fails (a config error, the set-up screen, a quit before typing)
    leaves no empty session behind. A resumed one is locked as it is opened (`SessionLog.open`): an
    idle app on `--continue` and a `ctxagent -p --continue` cannot both write it — the second gets a
    HistoryError naming the first.
    """
    root = root.resolve()
    target = resume_target(root, resume) if resume is not None else None  # refused before anything is written
    state = ensure_state_dir(root)
    try:
        (state / "sessions").mkdir(exist_ok=True)
    except OSError as exc:
        raise StateDirError(f"cannot create {state / 'sessions'}: {describe_os_error(exc)}") from exc
    sanitize = Sanitizer(config.secrets())
    try:
        if target is not None:
            log = SessionLog.open(target, sanitize=sanitize)
        else:
            session_id = new_session_id()
            path = sessions_dir(root) / f"{session_id}.jsonl"
            if path.exists():
                raise HistoryError(f"session {session_id} already exists at {path}")
            # The file comes with the first message; whether it can be written is known now, so a
            # read-only `.ctxagent/` is a clear error at the start, not mid-turn. (Nothing is left.)
            tempfile.TemporaryFile(dir=path.parent).close()
            log = SessionLog(path=path, session_id=session_id, sanitize=sanitize, pending_until=UserData.KIND)
            endpoint = _config_endpoint(config)
            log.append(SessionStartData(session=log.session_id, model=endpoint.label if endpoint else config.model or "",
                                        provider=endpoint.provider if endpoint else "",
                                        base_url=endpoint.base_url or "" if endpoint else "", cwd=str(root), parent=parent,
                                        permission_mode=config.permission_mode))
    except OSError as exc:  # a read-only `.ctxagent/`, a full disk
        raise StateDirError(f"cannot write the session log in {state / 'sessions'}: {describe_os_error(exc)}") from exc
    notices: list[str] = []
    if resume is not None and keep_model:
        config = with_session_model(config, log)
        notices = [line] if (line := base_url_change(log, config)) else []
    if resume is not None and keep_mode:
        config, line = with_session_mode(config, log)
        notices += [line] if line else []
    return Session(root=root, state_dir=state, config=config, log=log, notices=notices)


# -- the permission mode a session's steps run under ----------------------------------------------
# Logged when it changes (`record_mode`: Shift+Tab when idle, else at the next step), so that a resume,
# `inspect` and `report` know the mode each step ran under. A log never raises permissions.

@dataclass
class ModeTrail:
    """The mode a log's steps run under, folded over its events as they arrive: the step asks at every
    step, and a walk back over a long log each time would cost O(history) per step."""

    seen: int = 0  # events folded
    mode: str | None = None
    log: SessionLog | None = None  # the log folded (another one starts the fold again)

    def of(self, log: SessionLog) -> str | None:
        events = log.events
        if log is not self.log or len(events) < self.seen:
            self.log, self.seen, self.mode = log, 0, None
        for e in events[self.seen:]:
            if e.kind == PermissionModeData.KIND:
                self.mode = e.as_(PermissionModeData).mode
            elif e.kind == SessionStartData.KIND and (mode := e.as_(SessionStartData).permission_mode):
                self.mode = mode
        self.seen = len(events)
        return self.mode


def session_mode(log: SessionLog, trail: ModeTrail | None = None) -> str | None:
    """The mode the session last ran under: its last `permission_mode` event's, else the one its start
    names; None when neither does (a log of an older ctxagent). `trail`: the caller's fold of this log."""
    return (trail or ModeTrail()).of(log)


def record_mode(log: SessionLog, mode: str, trail: ModeTrail | None = None) -> Event | None:
    """Log `mode` as the session's when it is not already (the event, or None when unchanged)."""
    return None if session_mode(log, trail) == mode else log.append(PermissionModeData(mode=mode))


def with_session_mode(config: Config, log: SessionLog) -> tuple[Config, str | None]:
    """`config` (a copy when changed) on the mode the session last ran under, unless that is more
    permissive than the config's: a log in the repository can lower what runs unasked, never raise it.
    The line says what was kept (None when the modes agree or the log names none)."""
    from ctxagent.agent.permissions import PERMISSION_MODES, more_permissive

    logged, configured = session_mode(log), config.permission_mode
    if logged is None or logged == configured:
        return config, None
    if logged not in PERMISSION_MODES or more_permissive(logged, configured):
        return config, (f"this session last ran in {logged} mode; your config allows {configured}, so it stays "
                        f"{configured} (a session log never raises permissions)")
    return (config.model_copy(update={"permission_mode": logged}, deep=True),
            f"permission mode: {logged}, as this session last ran (Shift+Tab: next mode)")


# -- the endpoint a session's requests go to ------------------------------------------------------
# Recorded in the log (a `session_start` event: at the start, and again whenever an agent runs the
# session on another endpoint — /model, a resume on another model), so that every command that calls
# a model for the session later (`ctxagent compact`, a resume) sends the conversation where it went.

@dataclass(frozen=True)
class Endpoint:
    """Where a session's requests go: the provider, the model, the base URL ("": the provider's own;
    None: not recorded — a log of an older ctxagent). Never a key: keys come from the config."""

    provider: str
    model: str
    base_url: str | None = ""

    @property
    def label(self) -> str:
        """"provider:model", as a config's `model` names it."""
        return f"{self.provider}:{self.model}" if self.provider else self.model


def public_url(url: str | None) -> str:
    """`url` without what may be a secret in it: user name and password, query and fragment."""
    if not url:
        return ""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    return urlunsplit((parts.scheme, host + port, parts.path, "", ""))


def endpoint_for(config: Config, label: str) -> Endpoint:
    """The endpoint an agent for `label` ("provider:model", as resolved) sends to under `config`."""
    from ctxagent.agent.providers import specs

    provider, _, model = label.partition(":")
    spec = specs.find(provider)
    base = specs.key_url(spec, config) if spec is not None else None
    return Endpoint(provider, model, public_url(base))


def _config_endpoint(config: Config) -> Endpoint | None:
    """The endpoint `config` names when its model says the provider by a prefix or a bare name the
    provider owns (providers/specs.py only: a new session opens before the first frame, without the
    model registry). Otherwise None: the agent records its endpoint when it is built (Agent)."""
    from ctxagent.agent.providers import specs

    name = (config.model or "").strip()
    if not name:
        return None
    spec = specs.provider_of_model(name)
    if spec is not None:
        model = name.partition(":")[2].strip()
        return endpoint_for(config, f"{spec.name}:{model}") if model else None
    owner = next((s for s in specs.providers() if s.owns_bare_name(name)), None)
    return endpoint_for(config, f"{owner.name}:{name}") if owner is not None else None


def _start_data(log: SessionLog) -> SessionStartData | None:
    return next((e.as_(SessionStartData) for e in log.events if e.kind == SessionStartData.KIND), None)


def session_endpoint(log: SessionLog) -> Endpoint | None:
    """The endpoint the session's requests go to now: the last `session_start` event that names a
    model. None when no event names one. For a log of an older ctxagent, which recorded only the
    model, the provider is read from the model's name and `base_url` is None (unknown)."""
    for e in reversed(log.events):
        if e.kind != SessionStartData.KIND:
            continue
        data = e.as_(SessionStartData)
        if not data.model:
            continue
        if data.provider:
            return Endpoint(data.provider, data.model.removeprefix(f"{data.provider}:"), data.base_url)
        from ctxagent.agent.providers.registry import parse_model_name

        try:
            provider, model = parse_model_name(data.model)
        except CtxagentError:
            return Endpoint("", data.model, None)
        return Endpoint(provider, model, None)
    return None


def record_endpoint(log: SessionLog, endpoint: Endpoint) -> Event | None:
    """Log `endpoint` as the session's when it is not already (the event, or None when unchanged)."""
    if session_endpoint(log) == endpoint:
        return None
    start = _start_data(log)
    return log.append(SessionStartData(session=log.session_id, model=endpoint.label, provider=endpoint.provider,
                                       base_url=endpoint.base_url or "", cwd=start.cwd if start else ""))


def base_url_change(log: SessionLog, config: Config) -> str | None:
    """One line when the base URL the log recorded for the session's endpoint is not the one `config`
    sends that endpoint to now (the config's wins: the log never chooses where a key goes). None when
    they agree, or when the log recorded no base URL (an older ctxagent)."""
    recorded = session_endpoint(log)
    if recorded is None or recorded.base_url is None:
        return None
    now = endpoint_for(config, recorded.label).base_url or ""
    if now == recorded.base_url:
        return None

    def where(url: str) -> str:
        return url or f"{recorded.provider or 'the provider'}'s own URL"

    return (f"this session ran against {where(recorded.base_url)}, now {where(now)} from your config "
            "(the session log never chooses where requests go)")

