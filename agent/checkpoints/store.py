"""Code checkpoints per user turn: snapshots, the turns' diffs, and restoring the code (the rewind
itself, of code, conversation and memory, is agent/checkpoints/rewind.py).

The agent loop calls `Checkpoints.snapshot(session, turn, event_id)` before the first
file-changing tool of a user turn and appends a `checkpoint {turn, commit}` event to the session
log; at the end of the turn (also when it was cancelled) it calls `mark_turn_end(session, turn,
files)`. Snapshots live in a shadow git repository (see shadow_git.py) under refs

    refs/ctxagent/<session>/<turn>/pre     the tree before the turn's first change
    refs/ctxagent/<session>/<turn>/post    the tree the agent left at the end of the turn
    refs/ctxagent/<session>/last           the newest of all the above: what the agent last left
    refs/ctxagent/<session>/rewind/<seq>   the tree just before a code rewind (an undo point)

so that nothing is ever garbage collected. Each commit message ends with one JSON line of facts
(kind, session, turn, event_id, seq, files).

Which checkpoint restores "the code before turn t": the first snapshot taken after turn t's user
event, in log order. Turns in between made no file change through the agent, so that snapshot is
exactly the tree as it was when turn t began (plus edits made outside the agent before it).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxagent.agent.checkpoints.shadow_git import CheckpointError, ShadowRepo, TreeEntry
from ctxagent.agent.checkpoints.turns import FileStat, TurnInfo, list_turns
from ctxagent.agent.checkpoints.worktree import prune_empty_dirs, remove_path, write_entry
from ctxagent.context.errors import CtxagentError
from ctxagent.context.events import CheckpointData, SessionStartData
from ctxagent.context.floor.roots import check_root
from ctxagent.context.floor.state_paths import describe_os_error, ensure_parent
from ctxagent.context.history import SessionLog

try:
    import fcntl
except ImportError:  # not on POSIX: the thread lock alone
    fcntl = None  # type: ignore[assignment]  # the module's name bound to None: callers test `fcntl is not None`

ConfirmOverwrite = Callable[[list[str]], bool]

__all__ = [
    "CheckpointError",
    "Checkpoints",
    "ConfirmOverwrite",
    "FileStat",
    "RewindResult",
    "TurnInfo",
    "checkpoints_for_log",
]


@dataclass
class RewindResult:
    files_restored: list[str] = field(default_factory=list)
    files_deleted: list[str] = field(default_factory=list)
    conversation_to_id: int | None = None  # the rewind event's to_id, when the conversation was rewound
    skipped: list[str] = field(default_factory=list)  # changed outside and not confirmed, ignored, or unwritable
    changed_outside: list[str] = field(default_factory=list)  # paths confirm_overwrite was asked about
    checkpoint: str | None = None  # the snapshot the code was restored to
    backup_commit: str | None = None  # the tree just before the code rewind (undo point)
    rewind_event_id: int | None = None
    memory_retired: int = 0  # memory records of the rewound turns, no longer recalled
    warnings: list[str] = field(default_factory=list)  # what could not be done (the rest was)


_REF_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _ref_component(text: str) -> str:
    cleaned = _REF_UNSAFE.sub("_", text).strip(".") or "_"
    cleaned = cleaned.replace("..", "_")
    return cleaned + "_" if cleaned.endswith(".lock") else cleaned


def _facts(message: str) -> dict[str, Any]:
    for line in reversed(message.strip().splitlines()):
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                return {}
            return obj if isinstance(obj, dict) else {}
    return {}


class Checkpoints:
    """Snapshots of `repo_root` per session turn, kept in `<state_dir>/shadow.git`."""

    def __init__(self, repo_root: Path, state_dir: Path | None = None):
        root = Path(repo_root).resolve()
        self.repo_root = root
        self.state_dir = Path(state_dir).resolve() if state_dir is not None else root / ".ctxagent"
        self.shadow = ShadowRepo(root, self.state_dir)
        self._thread_lock = threading.RLock()
        self._lock_depth = 0

    # -- refs and locking ------------------------------------------------------------------------

    def _base(self, session_id: str) -> str:
        return f"refs/ctxagent/{_ref_component(session_id)}"

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer at a time, also across processes (two sessions in one repository).

        Re-entrant within a thread: flock would deadlock on a second descriptor of the same file.
        """
        with self._thread_lock:
            if self._lock_depth:
                self._lock_depth += 1
                try:
                    yield
                finally:
                    self._lock_depth -= 1
                return
            lock_path = self.state_dir / "shadow.lock"
            try:
                ensure_parent(lock_path)
                fh = open(lock_path, "a+b")  # noqa: SIM115 - closed by the with below
            except OSError as exc:
                raise CheckpointError(f"cannot open {lock_path}: {describe_os_error(exc)}") from exc
            except CtxagentError as exc:
                raise CheckpointError(str(exc)) from exc
            with fh:
                if fcntl is not None:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
                self._lock_depth = 1
                try:
                    yield
                finally:
                    self._lock_depth = 0
                    if fcntl is not None:
                        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _commit(self, session_id: str, tree: str, kind: str, turn: int | None, **facts: Any) -> str:
        base = self._base(session_id)
        parent = self.shadow.resolve(f"{base}/last")
        meta = {"kind": kind, "session": session_id, "turn": turn, "seq": time.time_ns(), **facts}
        title = f"ctxagent {kind} snapshot: session {session_id}" + (f" turn {turn}" if turn is not None else "")
        message = f"{title}\n\n{json.dumps(meta, ensure_ascii=False)}\n"
        commit = self.shadow.commit(tree, message, parent)
        self.shadow.update_ref(f"{base}/last", commit)
        return commit

    def _rel(self, path: str | os.PathLike[str]) -> str | None:
        p = Path(path)
        if p.is_absolute():
            try:
                p = p.resolve().relative_to(self.repo_root)
            except (ValueError, OSError):
                return None
        rel = p.as_posix()
        return None if rel in ("", ".") or rel.startswith("../") else rel

    # -- what the loop calls ---------------------------------------------------------------------

    def snapshot(self, session_id: str, turn: int, event_id: int) -> str:
        """Snapshot the working tree before turn `turn` changes anything; returns the commit sha.

        Idempotent for the same (session, turn, event_id). A second snapshot for the same turn
        number but another event (turn numbers reused after a rewind) keeps the old one under
        `.../<turn>/pre-<old event_id>`.
        """
        with self._locked():
            ref = f"{self._base(session_id)}/{int(turn)}/pre"
            existing = self.shadow.resolve(ref)
            if existing is not None:
                old = _facts(self.shadow.message(existing))
                if old.get("event_id") == event_id:
                    return existing
                self.shadow.update_ref(f"{ref}-{old.get('event_id', 'old')}", existing)
            tree = self.shadow.scan()
            commit = self._commit(session_id, tree, "pre", int(turn), event_id=int(event_id))
            self.shadow.update_ref(ref, commit)
            return commit

    def mark_turn_end(self, session_id: str, turn: int, files: Iterable[str | os.PathLike[str]] = ()) -> str:
        """Snapshot what the agent left at the end of a turn (call it also when the turn was cancelled).

        `files` are the paths the turn's tools reported changing (absolute or repo-relative); they
        join the diff in `turns()`.
        """
        with self._locked():
            base = f"{self._base(session_id)}/{int(turn)}"
            pre = self.shadow.resolve(f"{base}/pre")
            rels = sorted({r for f in files if (r := self._rel(f)) is not None})
            tree = self.shadow.scan()
            commit = self._commit(session_id, tree, "post", int(turn), pre=pre, files=rels)
            self.shadow.update_ref(f"{base}/post", commit)
            return commit

    # -- reading checkpoints back -----------------------------------------------------------------

    def _positions(self, log: SessionLog) -> list[tuple[int, str]]:
        """(log position, commit) of every pre-turn snapshot of the session, oldest first.

        The log's checkpoint events come first; refs recorded by `snapshot()` fill gaps (e.g. a
        loop that crashed before appending the event), positioned by their event_id.
        """
        best: dict[str, int] = {}
        for e in log.events:
            if e.kind == "checkpoint" and e.as_(CheckpointData).commit:
                commit = e.as_(CheckpointData).commit
                if self.shadow.resolve(commit) is not None:
                    best[commit] = min(best.get(commit, e.id), e.id)
        if (self.shadow.git_dir / "HEAD").exists():
            for ref in self.shadow.refs(self._base(log.session_id) + "/"):
                facts = _facts(ref.message)
                if facts.get("kind") == "pre" and isinstance(facts.get("event_id"), int):
                    best[ref.commit] = min(best.get(ref.commit, facts["event_id"]), facts["event_id"])
        return sorted((pos, commit) for commit, pos in best.items())

    def _posts(self, session_id: str) -> dict[str, tuple[str, list[str]]]:
        """pre commit -> (post commit, files the tools reported)."""
        posts: dict[str, tuple[str, list[str]]] = {}
        if not (self.shadow.git_dir / "HEAD").exists():
            return posts
        for ref in self.shadow.refs(self._base(session_id) + "/"):
            facts = _facts(ref.message)
            if facts.get("kind") == "post" and facts.get("pre"):
                posts[str(facts["pre"])] = (ref.commit, [str(f) for f in facts.get("files") or []])
        return posts

    def checkpoint_for(self, log: SessionLog, user_event_id: int) -> str | None:
        """The snapshot that holds the code as it was when the user event was sent."""
        with self._locked():
            for pos, commit in self._positions(log):
                if pos >= user_event_id:
                    return commit
        return None

    def since_start(self, log: SessionLog) -> tuple[str, str] | None:
        """(the session's first pre-turn snapshot, a snapshot of the tree now): what /diff and /commit
        compare (agent/checkpoints/session_changes.py); None when the agent never changed a file."""
        with self._locked():
            positions = self._positions(log)
            return (positions[0][1], self.shadow.scan()) if positions else None

    def turns(self, log: SessionLog, include_hidden: bool = False) -> list[TurnInfo]:
        """User turns, oldest first, with the files each changed and a diffstat (for /rewind)."""
        with self._locked():
            return list_turns(self.shadow, log, self._positions(log), self._posts(log.session_id), include_hidden)

    # -- restoring the code ---------------------------------------------------------------------

    def restore(self, session_id: str, target: str, confirm_overwrite: ConfirmOverwrite | None = None,
                result: RewindResult | None = None) -> RewindResult:
        """Make the working tree equal to snapshot `target` (not ignored files only)."""
        result = result if result is not None else RewindResult()
        result.checkpoint = target
        with self._locked():
            now_tree = self.shadow.scan()
            now = self.shadow.tree_entries(now_tree)
            want = self.shadow.tree_entries(target)
            last = self.shadow.resolve(f"{self._base(session_id)}/last")
            left = self.shadow.tree_entries(last) if last else {}
            to_write = {p: e for p, e in want.items() if not e.is_gitlink and now.get(p) != e}
            to_delete = sorted(p for p, e in now.items() if p not in want and not e.is_gitlink)
            skipped: set[str] = set()
            for p in to_write:  # a file on disk but not in the scan: ignored now (or in a nested repository)
                where = self.repo_root / p
                if p not in now and os.path.lexists(where) and (os.path.islink(where) or not where.is_dir()):
                    skipped.add(p)
            outside = sorted(p for p in [*to_write, *to_delete] if p in now and p not in skipped and now[p] != left.get(p))
            result.changed_outside = outside
            if outside and not (confirm_overwrite is not None and confirm_overwrite(list(outside))):
                skipped.update(outside)
            writes = {p: e for p, e in to_write.items() if p not in skipped}
            deletes = [p for p in to_delete if p not in skipped]
            if writes or deletes:
                result.backup_commit = self._backup(session_id, now_tree)
                self._apply(writes, deletes, result, skipped)
                self._commit(session_id, self.shadow.scan(), "rewind", None, target=target, backup=result.backup_commit)
            result.skipped = sorted(skipped)
        return result

    def _backup(self, session_id: str, tree: str) -> str:
        base = self._base(session_id)
        parent = self.shadow.resolve(f"{base}/last")
        seq = time.time_ns()
        meta = {"kind": "rewind-backup", "session": session_id, "seq": seq}
        msg = f"ctxagent tree before a code rewind: session {session_id}\n\n{json.dumps(meta, ensure_ascii=False)}\n"
        commit = self.shadow.commit(tree, msg, parent)
        self.shadow.update_ref(f"{base}/rewind/{seq}", commit)
        return commit

    def _apply(self, writes: dict[str, TreeEntry], deletes: list[str], result: RewindResult, skipped: set[str]) -> None:
        for p in deletes:
            try:
                remove_path(self.repo_root, p)
            except OSError:
                skipped.add(p)
                continue
            result.files_deleted.append(p)
        prune_empty_dirs(self.repo_root, result.files_deleted)
        for p in sorted(writes):
            entry = writes[p]
            try:
                write_entry(self.repo_root, p, entry.mode, self.shadow.blob(entry.sha))
            except (OSError, CheckpointError):
                skipped.add(p)
                continue
            result.files_restored.append(p)

    def close(self) -> None:
        self.shadow.close()


def checkpoints_for_log(log: SessionLog, default_root: Path | None = None) -> Checkpoints:
    """The Checkpoints of the repository a session log belongs to.

    `<repo>/.ctxagent/sessions/<id>.jsonl` names its repository; otherwise the session_start
    event's cwd, else `default_root` (or the current directory). A folder that can never be a root
    (the home folder, `/`: context/floor/roots.py) is refused (RootRefusedError), whatever the log says.
    """
    folder = log.path.resolve().parent
    if folder.name == "sessions" and folder.parent.name == ".ctxagent":
        return Checkpoints(check_root(folder.parent.parent), folder.parent)
    for e in log.events:
        cwd = e.as_(SessionStartData).cwd if e.kind == "session_start" else ""
        if cwd and Path(cwd).is_dir():
            return Checkpoints(check_root(Path(cwd)))
    return Checkpoints(check_root(default_root or Path.cwd()))
