"""The task state that survives compaction, word for word (issue 21).

What the user asked is the one thing a summary must never paraphrase: agents that compact "forget they
are mid-task" or take the latest follow-up for the original request. So, whatever is compacted, every
request shows verbatim:
  - the current task's opening user message — the session's first live user message (a new task is
    a new session: /handoff drafts one);
  - the latest user message;
  - the open tasks the user stated (the ledger's TODO-like lines of user messages; a summary's own
    "Open tasks" are the summarizer's words and stay in the warm block).
A message the request still shows costs nothing here. One a compaction masks is quoted at the end of
the summary that masks it: that summary sits at the top of the history and changes only when the next
compaction does, so the quote is paid once per compaction, cached at every step in between (the warm
block, re-sent after the cached prefix every step, would pay it again and again).

Bounded: the quotes together stay within `share` of the window (BuildInputs.task_state_share); beyond
it the oldest of them is quoted by handle (read_event id=N) instead, never dropped silently — the
summary says so and the build report's notes too. A pure function of the view and the ledger, so a
rebuild from the log gives the same bytes; where nothing is masked it adds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxagent.context.builder.inputs import BuildInputs
from ctxagent.context.history import Summary, ViewItem
from ctxagent.context.ledger import Ledger
from ctxagent.context.pins import Pin
from ctxagent.context.tokens import TokenCounter

DEFAULT_SHARE = 0.15  # of the window, at most, for the verbatim quotes of masked task-state messages
HEAD = "Task state, kept word for word whatever is compacted (the user's own words; read_event id=N shows event N):"
LABELS = {"opening": "The task's opening user message", "latest": "The latest user message"}


@dataclass(frozen=True)
class _Entry:
    event_id: int
    kind: str  # "opening" | "latest" | "task"
    text: str
    summary_id: int  # the summary that masks it
    command: str = ""  # a project command's expansion: its name (the text is the repository's, not the user's)


@dataclass(frozen=True)
class TaskState:
    """What the builder adds for the task state: text per masking summary, and what it shows."""

    sections: dict[int, str] = field(default_factory=dict)  # summary event id -> text appended to it
    whole: frozenset[int] = frozenset()  # user events quoted whole (verbatim or by handle)
    tasks: frozenset[int] = frozenset()  # user events whose task lines are quoted
    note: str | None = None

    def shows(self, pin: Pin) -> bool:
        """A task the summaries' task state quotes already (the warm block need not repeat it). Binding
        constraints stay in the warm block even so: right before the newest message is where they bind."""
        return pin.kind == "task" and pin.event_id is not None and (pin.event_id in self.whole or pin.event_id in self.tasks)


EMPTY = TaskState()


def task_state(items: Sequence[ViewItem], ledger: Ledger | None, counter: TokenCounter, max_tokens: int,
               in_view: Sequence[Summary] | None = None) -> TaskState:
    """The task state quotes for a view whose compactions mask the task's messages (EMPTY if none).
    `in_view`: the view's summaries, when the caller has them (BuildCache's LogState)."""
    if ledger is None or ledger.opening is None:
        return EMPTY
    shown = in_view if in_view is not None else [it for it in items if isinstance(it, Summary)]
    summaries = [it for it in shown if it.block is None]
    if not summaries:
        return EMPTY

    def masking(event_id: int) -> Summary | None:
        return next((s for s in summaries if s.first_id <= event_id <= s.last_id), None)

    entries: list[_Entry] = []
    messages = [("opening", ledger.opening)]
    if ledger.latest_user is not None and ledger.latest_user.id != ledger.opening.id:
        messages.append(("latest", ledger.latest_user))
    for kind, ev in messages:
        s = masking(ev.id)
        if s is not None:
            ref = ev.user.template
            entries.append(_Entry(ev.id, kind, ev.user.text, s.event_id, ref.name if ref is not None and ref.project else ""))
    whole = {e.event_id for e in entries}
    for pin in ledger.tasks.values():
        if pin.event_id is not None and pin.event_id not in whole and (s := masking(pin.event_id)) is not None:
            entries.append(_Entry(pin.event_id, "task", pin.text, s.event_id))
    if not entries:
        return EMPTY
    entries.sort(key=lambda e: (e.event_id, e.kind != "opening"))
    by_handle: set[int] = set()  # indexes into entries
    while True:
        sections = _sections(entries, by_handle, counter)
        used = sum(counter.count(t) for t in sections.values())
        if used <= max_tokens or len(by_handle) == len(entries):
            break
        by_handle.add(next(i for i in range(len(entries)) if i not in by_handle))  # the oldest first
    note = None
    if by_handle:
        named = ", ".join(f"{_name(entries[i])} (event {entries[i].event_id})" for i in sorted(by_handle))
        note = (f"task state beyond {max_tokens} tokens (its share of the window): quoted by handle instead of "
                f"word for word: {named}")
    return TaskState(sections, frozenset(whole), frozenset(e.event_id for e in entries if e.kind == "task"), note)


def _name(e: _Entry) -> str:
    return {"opening": "the task's opening user message", "latest": "the latest user message"}.get(
        e.kind, "an open task the user stated")


def _sections(entries: list[_Entry], by_handle: set[int], counter: TokenCounter) -> dict[int, str]:
    out: dict[int, list[str]] = {}
    for i, e in enumerate(entries):
        lines = out.setdefault(e.summary_id, [HEAD])
        if i in by_handle:
            what = LABELS.get(e.kind, "An open task the user stated")
            lines.append(f"{what} (event {e.event_id}, {counter.count(e.text)} tokens) is not quoted here for space: "
                         f"read_event id={e.event_id} shows it word for word.")
        elif e.kind == "task":
            lines.append(f"Open task the user stated (event {e.event_id}): {e.text}")
        else:
            whose = (f", the project's command /{e.command}: the repository's text, not the user's words"
                     if e.command else "")
            lines += [f"{LABELS[e.kind]} (event {e.event_id}{whose}), verbatim:", "<<<", e.text, ">>>"]
    return {sid: "\n".join(lines) for sid, lines in out.items()}


def task_state_for(inputs: BuildInputs, items: Sequence[ViewItem], ledger: Ledger | None, limit: int,
                   in_view: Sequence[Summary] | None = None) -> TaskState:
    """The task state of one build: within `inputs.task_state_share` of the limit."""
    return task_state(items, ledger, inputs.counter, int(limit * inputs.task_state_share), in_view)
