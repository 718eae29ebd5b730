"""The warm block of the ctxagent strategy: what sits right before the newest message every step.

The session ledger's working-memory block first (the user's constraints and tasks, then a summary's
tasks, failing tests, recent decisions with their authors, changed files: context/ledger.py), then
what the memory hook recalls for this step (the user's binding records, then the rest as data with
its author: context/memory/recall.py), in at most RECALL_SHARE of the warm slice. Whose line binds
is decided in one place, context/language/provenance.py (`binds`); the headings say it. Lines the ledger already shows, or leaves out because the request
still shows their message, are not repeated. A failing memory hook is left out and a note says so:
memory trouble never stops a step.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from ctxagent.context.builder.cache import RecallCue
from ctxagent.context.builder.inputs import BuildInputs
from ctxagent.context.builder.task_state import TaskState
from ctxagent.context.history import Event, Summary, ViewItem
from ctxagent.context.language.terms import normalize
from ctxagent.context.ledger import Ledger

RECALL_SHARE = 0.3  # of the warm slice at most, for memory recalled for this step (after the session
# ledger's working-memory block)


def warm_text_for(inputs: BuildInputs, events: list[Event], ledger: Ledger | None = None,
                  items: list[ViewItem] | None = None, cue: RecallCue | None = None,
                  task: TaskState | None = None, in_view: Sequence[Summary] | None = None,
                  max_tokens: int | None = None) -> tuple[str, str | None]:
    """(warm block text, note): the session ledger's working-memory block, then what the memory hook
    recalls for this step. `events`: the live events; `ledger` and `cue`: theirs if already folded;
    `items`: the view, whose summaries say which messages are no longer shown (those still shown are
    not repeated; nor are those `task`, the task state a summary quotes, holds). A failing memory hook
    is left out and the note says so. `in_view`: the view's summaries, when the caller has them.
    `max_tokens`: the block's size at most (default the warm slice; relief's last tier passes what the
    prefix leaves)."""
    if inputs.warm_override is not None:
        return inputs.warm_override, None
    ledger = ledger if ledger is not None else Ledger().feed(events)
    max_tokens = inputs.budget.base("warm") if max_tokens is None else min(max_tokens, inputs.budget.base("warm"))
    if in_view is None and items is not None:
        in_view = [it for it in items if isinstance(it, Summary)]
    masked = None if in_view is None else [(it.first_id, it.last_id) for it in in_view]
    quoted = task.shows if task is not None and task.sections else None
    tail = ledger.tail_block(max_tokens, inputs.counter, masked, quoted)  # binding pins first: the whole share if need be
    if inputs.warm is None:
        return tail, None
    cue = cue if cue is not None else RecallCue().feed(events)
    room = min(int(max_tokens * RECALL_SHARE), max_tokens - inputs.counter.count(tail))
    try:
        recalled = inputs.warm.warm_block(cue.query, list(cue.files), inputs.turn, room, inputs.counter)
    except Exception as exc:  # memory trouble must not stop a step
        return tail, f"memory recall failed ({type(exc).__name__}: {exc}); the session ledger alone was used"
    # the store holds this session's pins too: what the ledger shows, or left out as shown, is not repeated
    known = "\n".join(ledger.tail_lines()) if recalled and masked is not None else tail
    return "\n".join(x for x in (tail, _without_repeats(recalled, known)) if x), None


def _without_repeats(block: str, tail: str) -> str:
    """The recalled block minus lines the ledger already shows (this session's pins are in both)."""
    if not block or not tail:
        return block
    shown = _shown(tail)
    lines = block.splitlines()
    kept = [ln for ln in lines if not ln.startswith("- ") or _bare(ln) not in shown]
    # a heading left with no line under it goes too (headings say whose lines follow)
    kept = [ln for i, ln in enumerate(kept)
            if ln.startswith(("- ", "<", "(")) or (i + 1 < len(kept) and kept[i + 1].startswith("- "))]
    return "" if all(not ln.startswith("- ") for ln in kept) else "\n".join(kept)


@lru_cache(maxsize=8)  # the ledger's block is the same from one step to the next until the ledger changes
def _shown(tail: str) -> frozenset[str]:
    """The bare lines of the ledger's block (`_bare`)."""
    return frozenset(_bare(line) for line in tail.splitlines())


@lru_cache(maxsize=4096)  # the same ledger lines come back at every step
def _bare(line: str) -> str:
    """A block line's text without its bullet and [turn N] / [constraint t1] tag."""
    return normalize(re.sub(r"^-\s*(?:\[[^\]]*\]\s*)?", "", line))
