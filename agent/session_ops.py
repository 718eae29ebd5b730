"""Session operations: what a user does to a session besides sending it a message.

One implementation each, used by the app's slash commands, the CLI (`ctxagent rewind`) and `Agent`
(through `SessionOpsMixin`); the app never writes the log itself.

- `rewind`: back to just before a user turn — the code (from the checkpoint taken before the turn's
  first change), the conversation (a `rewind` event, written only here, payload
  `{to_id, turn, mode}`; non-destructive, the log keeps everything), and the memory (records the
  rewound turns wrote are retired: no longer recalled, still listed).
- `rewind_menu`: the turns the /rewind picker offers, with code checkpoints when they are readable.
- `remember`: /remember TEXT — a pinned constraint (a `memory` event, and a pinned memory record).
- `seed_new_session`: /new with a summary, and the 90 % prompt's "new session": the old session's
  summary and pinned constraints at the start of the new log.
- `switch_model`: /model NAME — an agent for another model on the same session and log.
- `compaction_done`: what a compaction record dropped, in the user's words (turns and messages).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ctxagent.agent.checkpoints.turns import TurnInfo, first_line
from ctxagent.agent.updates import CompactionDone
from ctxagent.context.errors import CtxagentError, HistoryError
from ctxagent.context.events import CompactionData, MemoryData, RewindData
from ctxagent.context.history import Event, SessionLog, hidden_by_rewinds, view

if TYPE_CHECKING:
    from ctxagent.agent.checkpoints.store import Checkpoints, ConfirmOverwrite, RewindResult
    from ctxagent.agent.loop import Agent, AgentParts
    from ctxagent.agent.session import Session
    from ctxagent.context.memory import MemoryStore

RewindMode = Literal["both", "conversation", "code"]
REWIND_MODES: tuple[RewindMode, ...] = ("both", "conversation", "code")


# -- rewind ---------------------------------------------------------------------------------------

def find_user_turn(log: SessionLog, turn: int) -> Event:
    """The user event of `turn`: the newest visible one, else the newest hidden one."""
    hidden = hidden_by_rewinds(log.events)
    candidates = [e for e in log.events if e.kind == "user" and e.user.turn == int(turn)]
    visible = [e for e in candidates if e.id not in hidden]
    if visible:
        return visible[-1]
    if candidates:
        return candidates[-1]
    raise HistoryError(f"session {log.session_id} has no turn {turn}")


def log_turns(log: SessionLog) -> list[TurnInfo]:
    """Visible user turns from the log alone (no code checkpoints): the files each one's tools changed,
    no diffstat and nothing a code rewind could restore."""
    from ctxagent.context.compact import changed_files

    hidden = hidden_by_rewinds(log.events)
    live = [e for e in log.events if e.id not in hidden]
    out: list[TurnInfo] = []
    starts = [i for i, e in enumerate(live) if e.kind == "user"]
    for n, start in enumerate(starts):
        user = live[start]
        end = starts[n + 1] if n + 1 < len(starts) else len(live)
        out.append(TurnInfo(
            turn=user.user.turn, event_id=user.id, time=user.ts, first_line=first_line(user.user.text),
            checkpoint=None, own_checkpoint=False, files_changed=changed_files(live[start + 1:end]),
        ))
    return out


@dataclass(frozen=True)
class RewindMenu:
    """What the /rewind picker offers: the turns, and whether code can be restored (else why not)."""

    turns: list[TurnInfo]
    has_code: bool
    note: str = ""  # why code rewind is unavailable, when it is


def rewind_menu(log: SessionLog, checkpoints: Checkpoints | None) -> RewindMenu:
    if checkpoints is None:
        return RewindMenu(log_turns(log), False, "no code checkpoints in this session")
    try:
        return RewindMenu(checkpoints.turns(log), True)
    except CtxagentError as exc:
        return RewindMenu(log_turns(log), False, f"code checkpoints unavailable ({exc})")


def rewind(
    log: SessionLog,
    turn: int,
    mode: RewindMode = "both",
    *,
    checkpoints: Checkpoints | None = None,
    memory: Iterable[MemoryStore] = (),
    confirm_overwrite: ConfirmOverwrite | None = None,
) -> RewindResult:
    """Go back to just before `turn`: the code, the conversation, or both.

    Code: files whose content differs from what the agent last left (changed outside the agent) are
    overwritten or deleted only if `confirm_overwrite(paths)` returns True; with no callback they are
    skipped. Conversation: one `rewind` event hides the turn's user message and everything after it.
    Memory: with the conversation, records the rewound turns wrote are retired in every store given
    (the project's and the user's); a store failing is reported in `warnings`, it undoes nothing.
    """
    from ctxagent.agent.checkpoints.store import RewindResult

    if mode not in REWIND_MODES:
        raise ValueError(f"rewind mode must be both, conversation or code, not {mode!r}")
    user_event = find_user_turn(log, turn)
    result = RewindResult()
    if mode in ("both", "code"):
        if checkpoints is None:
            raise HistoryError("this session has no code checkpoints: only the conversation can be rewound")
        target = checkpoints.checkpoint_for(log, user_event.id)
        if target is not None:
            checkpoints.restore(log.session_id, target, confirm_overwrite, result)
    if mode in ("both", "conversation"):
        ev = log.append(RewindData(to_id=user_event.id, turn=int(turn), mode=mode))
        log.sync()
        result.conversation_to_id = user_event.id
        result.rewind_event_id = ev.id
        for store in memory:
            try:
                result.memory_retired += store.retire_after(log.session_id, int(turn))
            except CtxagentError as exc:
                result.warnings.append(f"memory records of the rewound turns are still recalled: {exc}")
    return result


def describe_rewind(result: RewindResult, turn: int, mode: str) -> str:
    """One line for the user: what a rewind restored, deleted, skipped and retired."""
    parts = [f"rewound to before turn {turn} ({'code and conversation' if mode == 'both' else mode + ' only'})"]
    for label, files in (("restored", result.files_restored), ("deleted", result.files_deleted),
                         ("skipped", result.skipped)):
        if files:
            shown = ", ".join(files[:6]) + (f" and {len(files) - 6} more" if len(files) > 6 else "")
            parts.append(f"{label}: {shown}")
    if result.memory_retired:
        n = result.memory_retired
        parts.append(f"{n} memory record{'s' if n != 1 else ''} from those turns no longer recalled")
    parts += result.warnings
    return "; ".join(parts)


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
        new_log.append(CompactionData(first_id=first, last_id=first, summary=summary, method=method,
                                      seeded_from=old_log.session_id, created=round(time.time(), 3)))
    for pin in collect_pins(old_log.events):
        if pin.kind == "constraint":
            new_log.append(MemoryData(op="remember", type="constraint", text=pin.text, turn=0,
                                      seeded_from=old_log.session_id))
    new_log.sync()


def switch_model(session: Session, name: str, make_agent: Callable[[Session], Agent], carry_from: Agent | None = None) -> Agent:
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
        agent.allowed_for_session |= carry_from.allowed_for_session
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


# -- the Agent's side -----------------------------------------------------------------------------

class SessionOpsMixin:
    """The session operations as `Agent` methods, with the agent's own checkpoints and memory."""

    session: Session
    parts: AgentParts

    @property
    def model_label(self) -> str:
        return self.parts.model_label

    @property
    def memory(self) -> MemoryStore | None:
        return self.parts.memory

    @property
    def checkpoints(self) -> Checkpoints | None:
        return self.parts.checkpoints

    @property
    def calibration_ratio(self) -> float:
        return float(self.parts.calibrator.ratio)

    def memory_stores(self) -> list[MemoryStore]:
        """Every store this session writes to: the project's, and the user's (cross-project)."""
        stores = [self.parts.memory] if self.parts.memory is not None else []
        user = getattr(self.parts.warm, "user_store", None)
        return stores + ([user] if user is not None else [])

    def remember(self, text: str) -> Event:
        """/remember TEXT (see `remember`: the pin is in the log even when the memory store then fails)."""
        return remember(self.session.log, text, self.parts.memory)

    def rewind_menu(self) -> RewindMenu:
        return rewind_menu(self.session.log, self.parts.checkpoints)

    def rewind(self, turn: int, mode: RewindMode = "both", confirm_overwrite: ConfirmOverwrite | None = None) -> RewindResult:
        return rewind(self.session.log, turn, mode, checkpoints=self.parts.checkpoints, memory=self.memory_stores(),
                      confirm_overwrite=confirm_overwrite)

    def new_session(self, with_summary: bool, open_session: Callable[..., Session] | None = None) -> Session:
        """A new session of the same repository and config, child of this one; seeded with this one's
        summary and pinned constraints when `with_summary`."""
        if open_session is None:
            from ctxagent.agent.session import open_session
        old = self.session
        new = open_session(old.root, old.config, parent=old.id)
        if with_summary:
            summary, method = session_summary(old.log.events, self.parts.summarize)
            seed_new_session(new.log, old.log, summary, method)
        old.log.sync()
        return new

