"""Session operations behind slash commands that are plain log appends (no UI, no model call needed).

- `seed_new_session`: /new and the 90 % prompt's "new session with summary": a fresh log whose first
  item is a summary of the old session (a compaction record over the seed event, so `view()` shows it
  as a Summary) and whose pinned constraints are carried over as `memory` remember events.
- `remember`: /remember TEXT — a pinned constraint (`memory` event, op "remember"; the builder's
  session pins and the memory store both pick it up).
- `user_turns` / `rewind_conversation`: the conversation-only rewind used when no code checkpoints
  are available — a non-destructive `rewind` event.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ctxagent.context.history import Event, SessionLog, view

EDIT_TOOLS = frozenset({"edit_file", "write_file", "apply_patch", "multi_edit"})


@dataclass(frozen=True)
class TurnRow:
    """Same fields as the checkpoint API's TurnInfo, so the rewind picker shows either."""

    turn: int
    event_id: int
    time: float
    first_line: str
    files: list[str] = field(default_factory=list)
    diffstat: str = ""
    commit: str | None = None


def user_turns(log: SessionLog) -> list[TurnRow]:
    """User turns not hidden by a rewind (compacted ones included: a rewind past a compaction brings
    the originals back), with the files their tools changed (from tool-result meta)."""
    from ctxagent.context.pins import live_events

    items = live_events(log.events)
    rows: list[TurnRow] = []
    files: dict[int, list[str]] = {}
    current: int | None = None
    for it in items:
        if it.kind == "user":
            current = int(it.data.get("turn", len(rows) + 1))
            text = str(it.data.get("text", "")).strip()
            rows.append(TurnRow(current, it.id, it.ts, text.splitlines()[0][:80] if text else ""))
            files[current] = []
        elif it.kind == "tool_result" and current is not None and not it.data.get("is_error"):
            meta = it.data.get("meta") or {}
            if "diff" not in meta and it.data.get("name") not in EDIT_TOOLS:
                continue  # read_file names its file too: only changes count
            for f in meta.get("files") or []:
                if f not in files[current]:
                    files[current].append(str(f))
    return [TurnRow(r.turn, r.event_id, r.time, r.first_line, files.get(r.turn, [])) for r in rows]


def rewind_conversation(log: SessionLog, turn: int) -> Event:
    """Hide the conversation from `turn`'s user message on (the events stay in the log)."""
    for row in user_turns(log):
        if row.turn == turn:
            ev = log.append("rewind", to_id=row.event_id, turn=turn, mode="conversation")
            log.sync()
            return ev
    raise ValueError(f"no visible user turn {turn} to rewind to")


def remember(log: SessionLog, text: str, store: Any = None) -> Event:
    """Pin a constraint: a `memory` event in the log, and a pinned record when a store is given."""
    text = text.strip()
    if not text:
        raise ValueError("nothing to remember: /remember TEXT")
    ev = log.append("memory", op="remember", type="constraint", text=text, turn=log.turn)
    if store is not None:
        _store_pinned(store, text, log.session_id, log.turn)
    return ev


def _store_pinned(store: Any, text: str, session: str, turn: int) -> None:
    store.add(text, "constraint", session=session, turn=turn, pinned=True, tags=["remember"])


def session_summary(events: list[Event], summarize: Any = None) -> tuple[str, str]:
    """(summary text, method) of everything visible in a session, in the compaction structure."""
    from ctxagent.context.compact import summarize_items

    items = view(events)
    if not items:
        return "", "extractive"
    summary, method, _note = summarize_items(items, summarize, None)
    return summary, method


def seed_new_session(new_log: SessionLog, old_log: SessionLog, summary: str, method: str) -> None:
    """Put the old session's summary and pinned constraints at the start of the new log."""
    from ctxagent.context.pins import collect_pins

    first = new_log.events[0].id if new_log.events else 0
    if summary.strip():
        new_log.append("compaction", first_id=first, last_id=first, summary=summary, method=method,
                       seeded_from=old_log.session_id, created=round(time.time(), 3))
    for pin in collect_pins(old_log.events):
        if pin.kind == "constraint":
            new_log.append("memory", op="remember", type="constraint", text=pin.text, turn=0,
                           seeded_from=old_log.session_id)
    new_log.sync()
