"""Session operations: what a user does to a session besides sending it a message.

One implementation each, used by the app's slash commands, the CLI and `Agent` (agent/loop.py, which
exposes them with its own log, checkpoints and memory); the app never writes the log itself.

- `rewind`, `rewind_menu`, `describe_rewind`, `find_user_turn`: the one rewind, in
  agent/checkpoints/rewind.py (imported here, the session operations' home).
- `remember`: /remember TEXT — a pinned constraint (a `memory` event, and a pinned memory record).
- `new_session` / `seed_new_session`: /new, with a summary or not, and the 90 % prompt's "new
  session": the old session's summary and pinned constraints at the start of the new log.
- `switch_model`: /model NAME — an agent for another model on the same session and log.
- `compaction_done`: what a compaction record dropped, in the user's words (turns and messages).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

from ctxagent.agent.checkpoints.rewind import (
    REWIND_MODES,
    RewindMenu,
    RewindMode,
    describe_rewind,
    find_user_turn,
    log_turns,
    rewind,
    rewind_menu,
)
from ctxagent.agent.updates import CompactionDone
from ctxagent.context.events import CompactionData, HandoffData, MemoryData
from ctxagent.context.history import Event, SessionLog, view

if TYPE_CHECKING:
    from ctxagent.agent.permissions import Allowance
    from ctxagent.agent.session import Session
    from ctxagent.context.memory import MemoryStore

__all__ = [
    "REWIND_MODES",
    "RewindMenu",
    "RewindMode",
    "compaction_done",
    "describe_rewind",
    "find_user_turn",
    "handoff_draft",
    "log_turns",
    "new_session",
    "open_handoff",
    "record_handoff",
    "remember",
    "rewind",
    "rewind_menu",
    "seed_new_session",
    "session_summary",
    "switch_model",
]


# -- remember, new session ------------------------------------------------------------------------

def remember(log: SessionLog, text: str, store: MemoryStore | None = None) -> Event:
    """Pin a constraint: a `memory` event in the log (the builder's session pins read it), and a
    pinned record in `store` when there is one. Raises ValueError on empty text."""
    text = text.strip()
    if not text:
        raise ValueError("nothing to remember: /remember TEXT")
    ev = log.append(MemoryData(op="remember", type="constraint", text=text, turn=log.turn))
    if store is not None:
        store.add(text, "constraint", session=log.session_id, turn=log.turn, pinned=True, tags=["remember"])
    return ev


def session_summary(events: list[Event], summarize: Callable[[str], str] | None = None) -> tuple[str, str]:
    """(summary text, method) of everything visible in a session, in the compaction structure."""
    from ctxagent.context.compact import summarize_items

    items = view(events)
    if not items:
        return "", "extractive"
    summary, method, _note = summarize_items(items, summarize, None)
    return summary, method


def seed_new_session(new_log: SessionLog, old_log: SessionLog, summary: str, method: str) -> None:
    """Put the old session's summary (a compaction record over the new log's first event, so the view
    shows it as a summary) and its pinned constraints at the start of the new log."""
    from ctxagent.context.pins import collect_pins

    first = new_log.events[0].id if new_log.events else 0
    if summary.strip():
        new_log.append(CompactionData(first_id=first, last_id=first, summary=cite_old_events(summary, old_log.session_id),
                                      method=method,
                                      seeded_from=old_log.session_id, created=round(time.time(), 3)))
    for pin in collect_pins(old_log.events):
        if pin.kind == "constraint":
            new_log.append(MemoryData(op="remember", type="constraint", text=pin.text, turn=0,
                                      seeded_from=old_log.session_id))
    new_log.sync()


_READ_EVENT_ID = re.compile(r"\bread_event (?!session=)id=")


def cite_old_events(summary: str, old: str) -> str:
    """A summary of session `old`, as the opening of the session that continues it: its event ids are
    `old`'s, so it says so, and its `read_event id=N` handles name that session (tools/history_tool.py
    opens the session a session continues)."""
    body = _READ_EVENT_ID.sub(f"read_event session={old} id=", summary)
    return (f"(This is a summary of session {old}, which this session continues; the event ids in it are that "
            f"session's: read_event session={old} id=N shows its event N.)\n{body}")


def new_session(old: Session, with_summary: bool, summarize: Callable[[str], str] | None = None,
                open_session: Callable[..., Session] | None = None) -> Session:
    """A new session of the same repository and config, child of `old`; seeded with `old`'s summary
    and pinned constraints when `with_summary` (`summarize`: the model call for it, None = extractive)."""
    if open_session is None:
        from ctxagent.agent.session import open_session as default_open
        open_session = default_open
    new = open_session(old.root, old.config, parent=old.id)
    if with_summary:
        summary, method = session_summary(old.log.events, summarize)
        seed_new_session(new.log, old.log, summary, method)
    old.log.sync()
    return new


class _Permits(Protocol):
    @property
    def allowed_for_session(self) -> set[Allowance]: ...


A = TypeVar("A", bound=_Permits)


def switch_model(session: Session, name: str, make_agent: Callable[[Session], A], carry_from: A | None = None) -> A:
    """An agent for model `name` on the same session (same log, same turn numbering); the session's
    config names the new model only if that agent could be built (else it raises, nothing changed).
    `carry_from`: the previous agent, whose "allow for this session" permissions carry over."""
    old = session.config.model
    session.config.model = name.strip()
    try:
        agent = make_agent(session)
    except BaseException:
        session.config.model = old
        raise
    if carry_from is not None:
        agent.allowed_for_session.update(carry_from.allowed_for_session)
    return agent


# -- compaction -----------------------------------------------------------------------------------

def compaction_done(log: SessionLog, record: CompactionData, tokens_before: int, tokens_after: int) -> CompactionDone:
    """The event the UI shows for a compaction record: the summary, and which turns and how many
    messages it stands for (the originals stay in the log)."""
    first, last = record.first_id, record.last_id
    covered = [e for e in log.events if first <= e.id <= last and e.kind in ("user", "assistant", "tool_result")]
    turns = [e.user.turn for e in covered if e.kind == "user"]
    return CompactionDone(
        first, last, record.method, tokens_before, tokens_after, summary=record.summary, messages=len(covered),
        first_turn=min(turns, default=0), last_turn=max(turns, default=0),
    )


HANDOFF_QUOTE_CHARS = 2000  # of the old task's opening and latest messages, each; beyond, read_event
HANDOFF_FILES = 30


def handoff_draft(log: SessionLog, goal: str | None = None) -> str:
    """A new session's opening message, drafted from this one (/handoff, the handoff tool; Amp's
    Handoff is the anchor): the goal, the user's constraints, the open tasks, the files, and handles
    to this session's events. Constraints are the ledger's — the user's own words and /remember
    pins only, never the model's or a summary's (context/language/provenance.py's rule: USER binds)."""
    from ctxagent.context.ledger import Ledger
    from ctxagent.context.pins import live_events

    ledger = Ledger().feed(live_events(log.events))
    opening, latest = ledger.opening, ledger.latest_user
    goal = " ".join((goal or "").split())
    old = log.session_id
    lines = [f"Continuing from session {old} (a handoff: the events named below are that session's; "
             f"read_event session={old} id=N shows event N, as does `ctxagent inspect {old}`).", ""]
    lines.append(f"Goal: {goal}" if goal else "Goal: carry on with the task below.")
    if ledger.constraints:
        lines += ["", "Constraints (the user's own words; they still hold):",
                  *(f"- {p.text}" for p in ledger.constraints.values())]
    user_tasks = [p for p in ledger.tasks.values() if p.event_id is not None]
    if user_tasks:
        lines += ["", "Open tasks the user stated:", *(f"- {p.text} (event {p.event_id})" for p in user_tasks)]
    if ledger.failing is not None:
        event, failures = ledger.failing
        lines += ["", f"Failing tests at the handoff (event {event}):", *(f"- {f}" for f in failures[:10])]
    if ledger.changed:
        files = list(ledger.changed)[-HANDOFF_FILES:]
        lines += ["", "Files changed in that session: " + ", ".join(files)]
    for label, ev in (("The task's opening message", opening), ("The latest user message", latest)):
        if ev is None or (label.startswith("The latest") and opening is not None and ev.id == opening.id):
            continue
        ref = ev.user.template
        if ref is not None and ref.project:  # the draft becomes the user's words: never the repository's text
            lines += ["", f"{label} (event {ev.id}): /{ref.name} {ref.typed}".rstrip()
                      + f" — the project's command {ref.file}; its text is the repository's "
                        f"(read_event session={old} id={ev.id} shows it)"]
            continue
        text = ev.user.text
        cut = f"\n[… cut at {HANDOFF_QUOTE_CHARS} characters: read_event session={old} id={ev.id}]" \
            if len(text) > HANDOFF_QUOTE_CHARS else ""
        lines += ["", f"{label} (event {ev.id}):", text[:HANDOFF_QUOTE_CHARS] + cut]
    compactions = [e for e in log.events if e.kind == "compaction"]
    if compactions:
        lines += ["", f"Summaries in that session (read_event session={old} id=N): " + ", ".join(
            f"event {e.id} for events {e.compaction.first_id}–{e.compaction.last_id}" for e in compactions[-5:])]
    return "\n".join(lines).strip() + "\n"


def record_handoff(log: SessionLog, goal: str | None, by: str = "user") -> tuple[Event, str]:
    """Draft the handoff and write it to the log (what headless prints; the app's editor starts from it)."""
    text = handoff_draft(log, goal)
    ev = log.append(HandoffData(goal=" ".join((goal or "").split()), text=text, by=by))
    log.sync()
    return ev, text


def open_handoff(old: Session, text: str, open_session: Callable[..., Session] | None = None) -> Session:
    """The confirmed handoff: a new session, child of `old`, seeded with the user's constraints (as /new
    with a summary seeds them); the caller sends `text` as its first message."""
    if not text.strip():
        raise ValueError("an empty handoff message")
    new = new_session(old, with_summary=False, open_session=open_session)
    seed_new_session(new.log, old.log, "", "handoff")
    return new
