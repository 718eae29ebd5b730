"""The session's append-only event log (JSONL) and its pure view.

One event a line, flushed per event, fsync at the end of each turn (`sync()`). A torn or corrupt
line is skipped on load and counted, never fatal. Nothing is ever rewritten or deleted: compaction
and rewind are events too, and `view()` applies them.

Event kinds and their data (all JSON):
    session_start   {session, model, cwd, parent?, seeded_from?}
    user            {text, turn}
    assistant       {text, tool_calls: [{id, name, arguments}], stop_reason, usage, step, partial?}
    tool_result     {call_id, name, content, is_error, duration_ms, meta, spill?}
    compaction      {first_id, last_id, summary, method: "model"|"extractive", focus?}
    rewind          {to_id}            hides events to_id <= id < this event's id
    context_report  {step, report, request_sha256, warm}
    error           {message, error_type, step?}
    checkpoint      {turn, commit}
    memory          {op, ...}
    permission      {call_id, decision, reason?}
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxagent.context.errors import HistoryError

MESSAGE_KINDS = frozenset({"user", "assistant", "tool_result"})


@dataclass(frozen=True)
class Event:
    id: int
    kind: str
    data: dict[str, Any]
    ts: float = 0.0

    def to_json(self) -> str:
        return json.dumps({"id": self.id, "kind": self.kind, "ts": self.ts, "data": self.data}, ensure_ascii=False)

    @staticmethod
    def from_obj(obj: dict[str, Any]) -> Event:
        return Event(id=int(obj["id"]), kind=str(obj["kind"]), data=dict(obj.get("data") or {}), ts=float(obj.get("ts", 0.0)))


@dataclass(frozen=True)
class Summary:
    """A compaction summary standing in for the masked range [first_id, last_id]."""

    event_id: int
    first_id: int
    last_id: int
    text: str
    method: str = "extractive"


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
            to_id = int(e.data["to_id"])
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
    first, last = int(e.data["first_id"]), int(e.data["last_id"])
    kept: list[ViewItem] = []
    inserted = False
    summary = Summary(e.id, first, last, str(e.data.get("summary", "")), str(e.data.get("method", "extractive")))
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


@dataclass
class SessionLog:
    """An append-only JSONL log. `sanitize` runs on every event's data before it is written."""

    path: Path
    session_id: str
    events: list[Event] = field(default_factory=list)
    skipped_lines: int = 0
    sanitize: Callable[[Any], Any] | None = None
    _fh: Any = None

    @classmethod
    def create(cls, directory: Path, session_id: str, sanitize: Callable[[Any], Any] | None = None) -> SessionLog:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{session_id}.jsonl"
        if path.exists():
            raise HistoryError(f"session {session_id} already exists at {path}")
        path.touch()
        return cls(path=path, session_id=session_id, sanitize=sanitize)

    @classmethod
    def load(cls, path: Path, sanitize: Callable[[Any], Any] | None = None) -> SessionLog:
        if not path.exists():
            raise HistoryError(f"no session log at {path}")
        events: list[Event] = []
        skipped = 0
        with path.open("rb") as fh:
            for raw in fh:
                try:
                    obj = json.loads(raw.decode("utf-8"))
                    ev = Event.from_obj(obj)
                except (ValueError, KeyError, TypeError, UnicodeDecodeError):
                    skipped += 1  # a torn last line after a crash, or a corrupt one: never fatal
                    continue
                if ev.id != len(events):  # ids are positions; renumber defensively after a skip
                    ev = Event(len(events), ev.kind, ev.data, ev.ts)
                events.append(ev)
        log = cls(path=path, session_id=path.stem, events=events, skipped_lines=skipped, sanitize=sanitize)
        if skipped:
            log._ensure_newline()
        return log

    def _ensure_newline(self) -> None:
        with self.path.open("rb+") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() == 0:
                return
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                fh.write(b"\n")

    def append(self, kind: str, **data: Any) -> Event:
        if self.sanitize is not None:
            data = self.sanitize(data)
        ev = Event(id=len(self.events), kind=kind, data=data, ts=round(time.time(), 3))
        if self._fh is None:
            self._fh = self.path.open("a", encoding="utf-8")
        self._fh.write(ev.to_json() + "\n")
        self._fh.flush()
        self.events.append(ev)
        return ev

    def sync(self) -> None:
        """Make every appended event durable (called at the end of each turn)."""
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self.sync()
            self._fh.close()
            self._fh = None

    def view(self) -> list[ViewItem]:
        return view(self.events)

    def of_kind(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]

    @property
    def turn(self) -> int:
        """The number of the latest user turn (0 before the first)."""
        for e in reversed(self.events):
            if e.kind == "user":
                return int(e.data.get("turn", 0))
        return 0
