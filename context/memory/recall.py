"""The warm block: what memory puts right before the newest message, every step.

    all pinned constraints  (never evicted by relevance; oldest first)
    + open todos            (oldest first)
    + top-k records relevant to the query (latest user message + files touched this turn)

one compact line each — "[constraint t1] don't modify config files" — capped to `max_tokens`.
Superseded records never appear (search and listing here both exclude them). The output is a
pure function of the database state and the arguments: same state, same block.
"""

from __future__ import annotations

from typing import Protocol

from ctxagent.context.memory.record import Record
from ctxagent.context.memory.store import MemoryDB
from ctxagent.context.pins import WARM_CLOSE, WARM_OPEN

HEADER = "Working memory — pinned constraints (binding), open tasks, and records relevant to this step:"
MAX_PINNED = 100
MAX_TODOS = 30
RELEVANT_TYPES = ("decision", "constraint", "change", "todo", "note", "summary")


class TokenCounter(Protocol):
    def count(self, text: str) -> int: ...


class MemoryRecall:
    """The builder's WarmProvider, backed by the memory database (a MemoryStore, or a bare MemoryDB)."""

    def __init__(self, store: MemoryDB, session: str = "", top_k: int = 8, age: bool = True,
                 user_store: MemoryDB | None = None):
        self.store = store
        self.user_store = user_store  # cross-project preferences: their pinned constraints come first
        self.session = session
        self.top_k = top_k
        self.age = age

    def records(self, query: str, files: list[str], turn: int) -> list[Record]:
        """The records of the warm block, in block order, before the token cap."""
        if self.age and turn:
            self.store.age(turn)
        # newest first with a generous cap (the token cap below is the real limit), shown oldest first
        pinned = self.store.list(type="constraint", pinned=True, include_superseded=False, newest_first=True, limit=MAX_PINNED)[::-1]
        todos = self.store.list(type="todo", status="open", include_superseded=False, newest_first=True, limit=MAX_TODOS)[::-1]
        chosen: dict[int, Record] = {r.id: r for r in pinned + todos}
        if self.user_store is not None:
            mine = self.user_store.list(type="constraint", pinned=True, include_superseded=False, newest_first=True, limit=MAX_PINNED)[::-1]
            # ids of the two stores overlap: key the user's records apart, and show them first
            chosen = {**{-r.id: r for r in mine}, **chosen}
        relevant: list[Record] = []
        q = " ".join([query or "", *(f for f in files or [])]).strip()
        if q:
            # lexical only: a nearest vector always exists, so similarity alone would fill the block with
            # weak matches every step; the search tool is where semantic recall pays
            relevant = self.store.lexical_search(q, layer="warm", type=RELEVANT_TYPES, limit=self.top_k + len(chosen))
        for f in files or []:
            relevant += self.store.list(file=f, layer="warm", include_superseded=False, newest_first=True, limit=3)
        extra: list[Record] = []
        for r in relevant:
            if r.id not in chosen and all(r.id != e.id for e in extra):
                extra.append(r)
            if len(extra) >= self.top_k:
                break
        return list(chosen.values()) + extra

    def warm_block(self, query: str, files: list[str], turn: int, max_tokens: int, counter: TokenCounter) -> str:
        recs = self.records(query, files, turn)
        if not recs or max_tokens <= 0:
            return ""
        lines = [WARM_OPEN, HEADER]
        # room for the closing tag and an "omitted" note, so the cap holds with them
        reserve = counter.count(WARM_CLOSE) + counter.count("(99 more records omitted for space; search_memory finds them)") + 2
        used = sum(counter.count(x) + 1 for x in lines) + reserve
        omitted = 0
        for rec in recs:
            line = "- " + rec.line()
            cost = counter.count(line) + 1
            if used + cost > max_tokens:
                short = _truncate(line, max_tokens - used - 1, counter) if rec.pinned else ""
                if short:  # a pinned constraint is cut short rather than dropped
                    lines.append(short)
                    used += counter.count(short) + 1
                else:
                    omitted += 1
                continue
            lines.append(line)
            used += cost
        if len(lines) == 2:
            return ""
        if omitted:  # never silently: say what did not fit
            lines.append(f"({omitted} more records omitted for space; search_memory finds them)")
        lines.append(WARM_CLOSE)
        return "\n".join(lines)


def _truncate(line: str, budget: int, counter: TokenCounter) -> str:
    if budget <= 2:
        return ""
    lo, hi = 0, len(line)
    while lo < hi:  # the longest prefix that fits, by binary search on characters
        mid = (lo + hi + 1) // 2
        if counter.count(line[:mid] + "…") <= budget:
            lo = mid
        else:
            hi = mid - 1
    return line[:lo] + "…" if lo > 8 else ""
