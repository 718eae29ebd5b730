"""Conversational turns as cold, searchable records: "what did we say about X two days ago".

Every user and assistant event with text becomes one `turn` record (cold: searched, never put in
the warm block, never merged or superseded — it is what was said, not a fact that can go stale):

    content   the words as said (a long turn keeps its start and its end, MAX_TURN_CHARS in all)
    context   the end of the previous turn of the same session, and — once it arrives — the start of
              the next one: a question and its answer find each other ("what did you name it?" /
              "Shelly"). The next turn's text is appended to the earlier record when it is ingested.
    tags      the role (user / assistant) and the day it was said (YYYY-MM-DD, UTC)
    created_at  the event's time (when it was said)
    source_events  the event id (provenance back to the log line)

Chinese and English alike: the store's tokenizer indexes both.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ctxagent.context.history import Event
from ctxagent.context.language.provenance import COMMAND, MODEL, USER

if TYPE_CHECKING:
    from ctxagent.context.memory.store import MemoryDB

TURN_TYPE = "turn"
MAX_TURN_CHARS = 8000   # a long answer stays findable by its words; the log keeps the whole of it
NEIGHBOUR_CHARS = 400   # how much of the previous / next turn a record carries as context


def turn_text(ev: Event) -> str:
    """The words of a user or assistant event that a turn record keeps ('' for none; a stream that
    broke off mid-answer is not kept: what was said is its retry)."""
    if ev.kind == "user":
        return ev.user.text.strip()
    if ev.kind == "assistant" and not ev.assistant.partial:
        return ev.assistant.text.strip()
    return ""


def _author(ev: Event) -> str:
    """Who wrote a turn: the user, the model, or — a project command's expansion — the project (COMMAND)."""
    if ev.kind != "user":
        return MODEL
    return COMMAND if ev.user.project_text else USER


def day_of(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts)) if ts > 0 else ""


def _head(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n].rsplit(" ", 1)[0] or text[:n]


def _tail(text: str, n: int) -> str:
    return text if len(text) <= n else text[-n:].split(" ", 1)[-1] or text[-n:]


def previous_turn(store: MemoryDB, session: str) -> tuple[int, str] | None:
    """(id, content) of the session's latest turn record, if any."""
    with store._lock:
        row = store.conn.execute(
            "SELECT id, content FROM records WHERE type = ? AND session = ? ORDER BY id DESC LIMIT 1", (TURN_TYPE, session)
        ).fetchone()
    return (int(row[0]), str(row[1])) if row else None


def write_turn(store: MemoryDB, ev: Event, session: str, turn: int) -> int | None:
    """Write the turn record for `ev` and give the previous turn this one as context; its id, or None."""
    text = turn_text(ev)
    if not text:
        return None
    content = text if len(text) <= MAX_TURN_CHARS else f"{_head(text, MAX_TURN_CHARS * 3 // 4)} … {_tail(text, MAX_TURN_CHARS // 4)}"
    prev = previous_turn(store, session)
    context = _tail(prev[1], NEIGHBOUR_CHARS) if prev else ""
    tags = [ev.kind, day_of(ev.ts)]
    rid = store.add(content, TURN_TYPE, layer="cold", tags=tags, session=session, turn=turn, source_events=[ev.id],
                    context=context, merge=False, supersede=False, said_at=ev.ts or None,
                    provenance=_author(ev))
    if prev is not None:
        store.extend_context(prev[0], _head(text, NEIGHBOUR_CHARS))
    return rid
