"""Rewind: back to just before a user turn — the code, the conversation, or both. The one rewind,
which the Agent (agent/session_ops.py), the app's /rewind and `ctxagent rewind` all call.

- the code: restored from the checkpoint taken before the turn's first change (`Checkpoints.restore`;
  files changed outside the agent are overwritten only when the caller confirms);
- the conversation: a `rewind` event (written only here, payload `{to_id, turn, mode}`) hides the
  turn's user message and everything after it; non-destructive, the log keeps everything;
- the code alone: the conversation stays in view — the model's edits and test runs of those turns
  included — so a `code_rewind` notice (written only here) says what was undone: the session
  ledger folds it (the files-changed list and the test state go back, the model is told), and the
  memory records that described the code of those turns (changes, test results) are retired;
- the memory: records the rewound turns wrote are retired (no longer recalled, still listed).

`rewind_menu` is what the /rewind picker offers: the turns, with code checkpoints when they are
readable; `describe_rewind` says in one line what a rewind did.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ctxagent.agent.checkpoints.store import Checkpoints, ConfirmOverwrite, RewindResult
from ctxagent.agent.checkpoints.turns import TurnInfo, first_line
from ctxagent.context.errors import CtxagentError, HistoryError
from ctxagent.context.events import CodeRewindData, RewindData
from ctxagent.context.history import Event, SessionLog, hidden_by_rewinds

if TYPE_CHECKING:
    from ctxagent.context.memory import MemoryStore

RewindMode = Literal["both", "conversation", "code"]
REWIND_MODES: tuple[RewindMode, ...] = ("both", "conversation", "code")


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
    (the project's and the user's); with the code alone, those that described the code (changes,
    test results). A store failing is reported in `warnings`, it undoes nothing.
    """
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
            if mode == "code":  # the conversation still shows those turns' edits: say they are undone
                ev = log.append(CodeRewindData(to_id=user_event.id, turn=int(turn), restored=result.files_restored,
                                               deleted=result.files_deleted, skipped=result.skipped,
                                               checkpoint=result.checkpoint))
                log.sync()
                result.rewind_event_id = ev.id
                _retire(memory, log.session_id, int(turn), result, code_only=True)
    if mode in ("both", "conversation"):
        ev = log.append(RewindData(to_id=user_event.id, turn=int(turn), mode=mode))
        log.sync()
        result.conversation_to_id = user_event.id
        result.rewind_event_id = ev.id
        _retire(memory, log.session_id, int(turn), result, code_only=False)
    return result


def _retire(memory: Iterable[MemoryStore], session: str, turn: int, result: RewindResult, *, code_only: bool) -> None:
    for store in memory:
        try:
            result.memory_retired += store.retire_after(session, turn, code_only=code_only)
        except CtxagentError as exc:
            result.warnings.append(f"memory records of the rewound turns are still recalled: {exc}")


def describe_rewind(result: RewindResult, turn: int, mode: str) -> str:
    """One line for the user: what a rewind restored, deleted, skipped and retired."""
    parts = [f"rewound to before turn {turn} ({'code and conversation' if mode == 'both' else mode + ' only'})"]
    for label, files in (("restored", result.files_restored), ("deleted", result.files_deleted),
                         ("skipped", result.skipped)):
        if files:
            shown = ", ".join(files[:6]) + (f" and {len(files) - 6} more" if len(files) > 6 else "")
            parts.append(f"{label}: {shown}")
    if mode == "code" and result.rewind_event_id is not None:
        parts.append("the conversation is kept and the model is told those changes are undone")
    if result.memory_retired:
        n = result.memory_retired
        parts.append(f"{n} memory record{'s' if n != 1 else ''} from those turns no longer recalled")
    parts += result.warnings
    return "; ".join(parts)
