"""The session's append-only event log (JSONL) and its pure view.

One event a line, flushed per event, fsync at the end of each turn (`sync()`). Nothing is ever
rewritten or deleted: compaction and rewind are events too, and `view()` applies them. The schema of
each event kind is in context/events.py: `append` validates a payload before writing it, `load`
validates every line. A torn line (a crash mid-write) is skipped and counted; a complete line whose
fields are wrong is kept as an `invalid` placeholder (so event ids, which are positions, stay aligned
with the ranges and rewinds that refer to them) and reported — neither is ever fatal.

A log open for writing holds an exclusive lock (context/session_lock.py), taken by `open` before it
reads: a second writer gets a HistoryError naming the first, instead of interleaving lines and ids
(a log only `load`ed re-reads its file when it takes the lock, at its first append). Logs are 0600.
Every string that enters or is read back has its lone surrogates escaped (`encodable`), so no later
request meets one; a line that is not UTF-8 loses its bad bytes, not the event, and one nested
deeper than `bounded_json.LOG_DEPTH` is an `invalid` placeholder.

A log may start *pending* (`pending_until="user"`): its events are kept in memory and the file is
created only when the first event of that kind is appended, so a start that fails (a config error, a
quit before typing) leaves no empty session behind.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from ctxagent.context import session_lock
from ctxagent.context.errors import HistoryError
from ctxagent.context.events import (
    AssistantData,
    CompactionData,
    ContextReportData,
    InvalidData,
    MemoryData,
    Payload,
    RewindData,
    ToolResultData,
    UserData,
    ValidationError,
    parse_payload,
    problem_of,
)
from ctxagent.context.floor import bounded_json
from ctxagent.context.floor.sanitize import encodable
from ctxagent.context.floor.state_paths import ensure_parent

P = TypeVar("P", bound=Payload)

MESSAGE_KINDS = frozenset({"user", "assistant", "tool_result"})


@dataclass(frozen=True)
class Event:
    """One log line: `data` is the payload as written; the typed accessors read it through its model."""

    id: int
    kind: str
    data: dict[str, Any]
    ts: float = 0.0

    def to_json(self) -> str:
        """The line (an appended event's strings are encodable: `SessionLog.append`)."""
        return json.dumps({"id": self.id, "kind": self.kind, "ts": self.ts, "data": self.data}, ensure_ascii=False)

    @staticmethod
    def from_obj(obj: dict[str, Any]) -> Event:
        """The envelope of a log line; raises ValueError/TypeError/KeyError when it is not one."""
        raw_id, ts = obj["id"], obj.get("ts", 0.0)
        if isinstance(raw_id, bool) or not isinstance(raw_id, int | float) or not math.isfinite(raw_id) or raw_id != int(raw_id):
            raise ValueError(f"bad event id {raw_id!r}")
        data = obj.get("data") or {}
        if not isinstance(obj["kind"], str) or not isinstance(data, dict):
            raise TypeError("bad event kind or data")
        ts = float(ts) if isinstance(ts, int | float) and math.isfinite(ts) else 0.0
        return Event(id=int(raw_id), kind=obj["kind"], data=dict(data), ts=ts)

    # -- the typed view --------------------------------------------------------------------------
    @cached_property
    def payload(self) -> Payload:
        """The validated payload (raises ValidationError on an event built with wrong fields)."""
        return parse_payload(self.kind, self.data)

    def as_(self, cls: type[P]) -> P:
        """The payload as `cls`; a HistoryError if this event is of another kind."""
        payload = self.payload
        if not isinstance(payload, cls):
            raise HistoryError(f"event {self.id} is a {self.kind!r} event, not {cls.KIND!r}")
        return payload

    @property
    def user(self) -> UserData:
        return self.as_(UserData)

    @property
    def assistant(self) -> AssistantData:
        return self.as_(AssistantData)

    @property
    def tool_result(self) -> ToolResultData:
        return self.as_(ToolResultData)

    @property
    def compaction(self) -> CompactionData:
        return self.as_(CompactionData)

    @property
    def rewind(self) -> RewindData:
        return self.as_(RewindData)

    @property
    def context_report(self) -> ContextReportData:
        return self.as_(ContextReportData)

    @property
    def memory(self) -> MemoryData:
        return self.as_(MemoryData)

    @property
    def turn(self) -> int | None:
        """The user turn this event belongs to, where the event says (user, assistant, tool_result, memory)."""
        value = getattr(self.payload, "turn", None)
        return value if isinstance(value, int) else None


@dataclass(frozen=True)
class Summary:
    """A compaction summary standing in for the masked range [first_id, last_id]."""

    event_id: int
    first_id: int
    last_id: int
    text: str
    method: str = "extractive"
    # method "server": the provider's compaction block, sent back verbatim (not hashed: a dict)
    block: dict[str, Any] | None = field(default=None, hash=False)


ViewItem = Event | Summary


def view(events: Iterable[Event]) -> list[ViewItem]:
    """What the model may see: message events with rewinds and compactions applied.

    Rewinds are applied first, newest first, so a rewind hides the compactions (and older rewinds)
    made after its target: rewinding past a compaction brings the originals back. Compactions then
    mask their range among the remaining messages, in log order; a later compaction may swallow an
    earlier summary whose whole range it covers.
    """
    evs = list(events)
    hidden = hidden_by_rewinds(evs)
    return _apply(evs if not hidden else [e for e in evs if e.id not in hidden], [])


def hidden_by_rewinds(events: Iterable[Event]) -> set[int]:
    """Ids of the events the rewinds hide, newest rewind first (a hidden rewind has no effect)."""
    evs = list(events)
    hidden: set[int] = set()
    for e in reversed(evs):
        if e.kind == "rewind" and e.id not in hidden:
            to_id = e.rewind.to_id
            hidden.update(x.id for x in evs if to_id <= x.id < e.id)
    return hidden


def extend_view(items: list[ViewItem], tail: Iterable[Event]) -> list[ViewItem]:
    """view(prefix + tail) from items = view(prefix), in O(len(tail) + masked range).

    Valid for a tail without rewind events: a rewind hides only events before it, so events after
    the prefix are never hidden by the prefix's rewinds, and the prefix's compactions were already
    applied. Returns a new list; `items` is not modified. Raises ValueError on a rewind in the tail.
    """
    tail = list(tail)
    if any(e.kind == "rewind" for e in tail):
        raise ValueError("extend_view: the tail holds a rewind; recompute view() instead")
    return _apply(tail, list(items))


def _apply(visible: list[Event], items: list[ViewItem]) -> list[ViewItem]:
    """Append visible message events to items and apply compactions, in log order."""
    for e in visible:
        if e.kind in MESSAGE_KINDS:
            items.append(e)
        elif e.kind == "compaction":
            items = _mask(items, e)
    return items


def _mask(items: list[ViewItem], e: Event) -> list[ViewItem]:
    c = e.compaction
    first, last = c.first_id, c.last_id
    kept: list[ViewItem] = []
    inserted = False
    summary = Summary(e.id, first, last, c.summary, c.method, c.server_block)
    for it in items:
        lo, hi = (it.first_id, it.last_id) if isinstance(it, Summary) else (it.id, it.id)
        if first <= lo and hi <= last:
            if not inserted:
                kept.append(summary)
                inserted = True
            continue
        kept.append(it)
    if not inserted:  # nothing visible left in range: keep the summary where the range ends
        kept.append(summary)
    return kept


def item_id(item: ViewItem) -> int:
    return item.first_id if isinstance(item, Summary) else item.id


def view_span(items: Sequence[ViewItem]) -> tuple[int, int] | None:
    """[first_id, last_id] of everything a view shows (summaries included) — what a provider's own
    compaction masks, since it summarized the whole request; None for an empty view."""
    if not items:
        return None
    first, last = items[0], items[-1]
    return item_id(first), (last.last_id if isinstance(last, Summary) else last.id)


@dataclass(frozen=True)
class SkippedLine:
    """A log line load could not use: torn (not JSON, not an event) or invalid (kept as a placeholder)."""

    line: int  # 1-based line number in the file
    problem: str
    placeholder: bool  # kept as an `invalid` event (its id stays taken)


@dataclass
class SessionLog:
    """An append-only JSONL log. `sanitize` runs on every event's data before it is written.

    Use it as a context manager (or call `close()`): the file handle and the lock are released."""

    path: Path
    session_id: str
    events: list[Event] = field(default_factory=list)
    skipped: list[SkippedLine] = field(default_factory=list)
    sanitize: Callable[[Any], Any] | None = None
    pending_until: str | None = None  # the kind of event that creates the file (see the module doc)
    _fh: Any = None
    _lock_fh: Any = None
    _turn: int = 0
    _pending: bool = field(default=False, init=False)
    _read_size: int | None = None  # bytes of the file `load` read (a later lock re-reads a grown file)

    def __post_init__(self) -> None:
        self._turn = max((ev.turn or 0 for ev in self.events if ev.kind == "user"), default=0)
        self._pending = self.pending_until is not None

    @property
    def pending(self) -> bool:
        """True while the log's file does not exist yet (see `pending_until`)."""
        return self._pending

    @classmethod
    def create(cls, directory: Path, session_id: str, sanitize: Callable[[Any], Any] | None = None) -> SessionLog:
        path = directory / f"{session_id}.jsonl"
        ensure_parent(path)  # a `.ctxagent/` on the way is made (and marked) by ensure_state_dir alone
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise HistoryError(f"session {session_id} already exists at {path}") from None
        os.close(fd)
        log = cls(path=path, session_id=session_id, sanitize=sanitize)
        log.lock()
        return log

    @classmethod
    def open(cls, path: Path, sanitize: Callable[[Any], Any] | None = None) -> SessionLog:
        """A log opened for appending: its lock taken first, then the file read (so nothing another
        process appended is missed, and nothing can be appended behind our back until `close`)."""
        lock = session_lock.acquire(path, path.stem) if path.exists() else None
        try:
            log = cls.load(path, sanitize=sanitize)  # a HistoryError when there is none
        except BaseException:
            if lock is not None:
                lock.close()
            raise
        log._lock_fh = lock
        if lock is not None and log.skipped:
            log._ensure_newline()  # a cut last line is ended only under the lock, before our first append
        return log

    @classmethod
    def load(cls, path: Path, sanitize: Callable[[Any], Any] | None = None) -> SessionLog:
        """Read a log (no lock: `report`, `inspect` and `doctor` only read; `open` to append)."""
        if not path.exists():
            raise HistoryError(f"no session log at {path}")
        events, skipped, size = _read_events(path)
        log = cls(path=path, session_id=path.stem, events=events, skipped=skipped, sanitize=sanitize)
        log._read_size = size  # nothing written: a reader must not touch a log another process may be writing
        return log

    @property
    def skipped_lines(self) -> int:
        return len(self.skipped)

    def lock(self) -> None:
        """Take the session's write lock, or raise HistoryError if another process holds it. A log
        read before (`load`) whose file has grown since is read again: those events are someone's
        else's, and the ids appended next must follow them."""
        if self._lock_fh is not None:
            return
        self._lock_fh = session_lock.acquire(self.path, self.session_id)
        if self._read_size is not None and self.path.exists() and self.path.stat().st_size != self._read_size:
            events, skipped, self._read_size = _read_events(self.path)
            self.events[:] = events
            self.skipped[:] = skipped
            self._turn = max((ev.turn or 0 for ev in self.events if ev.kind == "user"), default=0)
        if self.skipped and self.path.exists():
            self._ensure_newline()

    def _ensure_newline(self) -> None:
        with self.path.open("rb+") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() == 0:
                return
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                fh.write(b"\n")

    @property
    def next_id(self) -> int:
        """The id the next appended event gets."""
        return len(self.events)

    def append(self, payload: Payload, expect_id: int | None = None) -> Event:
        """Append one event: `append(UserData(text=…, turn=…))` — one of the payload types of
        context/events.py, whose `KIND` is the event's kind.

        The payload is validated (a HistoryError names the wrong field) and sanitized before it is
        written. `expect_id`: the id the caller planned for this event (the builder plans the ids of
        the compactions it returns); a mismatch raises instead of writing a range that points elsewhere.
        """
        if not isinstance(payload, Payload):
            raise TypeError(f"SessionLog.append takes a payload of context/events.py, not {type(payload).__name__}")
        if not self._pending:
            self.lock()  # before the id is taken: a log read earlier may have grown meanwhile
        data = payload.to_data()
        kind = type(payload).KIND or str(data.pop("kind", ""))
        if self.sanitize is not None:
            data = self.sanitize(data)
        data = encodable(data)  # no lone surrogate enters the log (see the module doc)
        if expect_id is not None and expect_id != len(self.events):
            raise HistoryError(f"planned event id {expect_id} but the log is at {len(self.events)}")
        ev = Event(id=len(self.events), kind=kind, data=data, ts=round(time.time(), 3))
        try:
            ev.payload  # noqa: B018 - never write what load would reject
        except ValidationError as exc:
            raise HistoryError(f"refusing to log a malformed {kind} event: {problem_of(exc)}") from None
        if self._pending:
            self.events.append(ev)
            if kind == self.pending_until:  # the file comes with this event, holding all so far
                self._write(self.events, create=True)
        else:
            self._write([ev])
            self.events.append(ev)
        if kind == "user":
            self._turn = max(self._turn, ev.turn or 0)
        return ev

    def _write(self, events: list[Event], *, create: bool = False) -> None:
        if self._fh is None:
            ensure_parent(self.path)
            self.lock()  # the write lock comes with the file
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | (os.O_EXCL if create else 0)
            self._fh, self._pending = os.fdopen(os.open(self.path, flags, 0o600), "a", encoding="utf-8"), False
        self._fh.write("".join(e.to_json() + "\n" for e in events))
        self._fh.flush()

    def sync(self) -> None:
        """Make every appended event durable (called at the end of each turn); a pending log has
        nothing on disk to sync."""
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self.sync()
            self._fh.close()
            self._fh = None
        if self._lock_fh is not None:
            self._lock_fh.close()  # releases the flock
            self._lock_fh = None

    def __enter__(self) -> SessionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def view(self) -> list[ViewItem]:
        return view(self.events)

    def of_kind(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]

    @property
    def turn(self) -> int:
        """The number of the latest user turn (0 before the first), tracked as events are appended."""
        return self._turn

    @property
    def next_turn(self) -> int:
        return self._turn + 1


def _read_events(path: Path) -> tuple[list[Event], list[SkippedLine], int]:
    """The events of a log file, the lines skipped or kept as placeholders, and the bytes read."""
    events: list[Event] = []
    skipped: list[SkippedLine] = []
    size = 0
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            size += len(raw)
            if not raw.strip():
                continue
            text = raw.decode("utf-8", "replace")  # bad bytes lose themselves, not the event
            ev = Event(len(events), "", {})
            try:
                ev = Event.from_obj(bounded_json.loads(text, bounded_json.LOG_DEPTH))
                if ev.id != len(events) or "\\ud" in text or "\\uD" in text:  # renumbered after a skip (ids
                    ev = Event(len(events), ev.kind, encodable(ev.data), ev.ts)  # are positions); surrogates healed
                ev.payload  # noqa: B018 - validate now, so no reader meets a bad field later
                problem = ""
            except ValidationError as exc:
                problem = f"{ev.kind} event {ev.id}: {problem_of(exc)}"
            except bounded_json.TooDeepError as exc:  # a whole line, not a torn one: its id stays taken
                problem = f"line {lineno}: {exc}"
            except (ValueError, KeyError, TypeError) as exc:
                # a torn last line after a crash, or garbage: skipped, never fatal
                skipped.append(SkippedLine(lineno, f"not an event ({type(exc).__name__})", placeholder=False))
                continue
            if problem:
                skipped.append(SkippedLine(lineno, problem, placeholder=True))
                ev = Event(ev.id, InvalidData.KIND, {"original_kind": ev.kind, "problem": problem,
                                                     "raw": encodable(text[:2000])}, ev.ts)
            events.append(ev)
    return events, skipped, size
