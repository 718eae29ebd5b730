"""Prune: cut old tool results to head/tail in the VIEW only (no model call, the log is untouched).

Order: lowest value first (errors, failed searches, bare acknowledgements), then oldest first.
The builder re-measures after each cut and stops as soon as the request fits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ctxagent.context.spill import head_tail
from ctxagent.context.tokens import TokenCounter

PRUNE_HEAD_TOKENS = 120
PRUNE_TAIL_TOKENS = 60

LOW_VALUE = 0
NORMAL_VALUE = 1

_FAILED_SEARCH = re.compile(
    r"^\s*(?:(?:no (?:matches|results|files)(?: found)?|0 matches|nothing found|not found)\b|未找到|没有匹配|无结果|找不到)",
    re.IGNORECASE,
)
_ACK = re.compile(
    r"^\s*(ok|okay|done|success(ful(ly)?)?|wrote \S+|written|saved|updated|created|file (written|saved|updated)|"
    r"applied|no changes|nothing to commit)\b|^\s*(?:完成|成功|已保存|已写入)",
    re.IGNORECASE,
)
SEARCH_TOOLS = frozenset({"grep", "search", "glob", "list_files", "find", "search_memory"})


def value_rank(content: str, name: str | None, is_error: bool) -> int:
    """LOW_VALUE for errors, failed searches and acknowledgements; NORMAL_VALUE otherwise."""
    if is_error:
        return LOW_VALUE
    text = content or ""
    if not text.strip():
        return LOW_VALUE
    if (name or "") in SEARCH_TOOLS and _FAILED_SEARCH.match(text):
        return LOW_VALUE
    if _FAILED_SEARCH.match(text):
        return LOW_VALUE
    if len(text) < 200 and _ACK.match(text):
        return LOW_VALUE
    return NORMAL_VALUE


def pruned_text(content: str, counter: TokenCounter, event_id: int | None, spill: dict | None = None) -> str:
    """Head and tail of an old tool result plus a note of what was cut and where the original is."""
    head, tail, cut = head_tail(content, counter, PRUNE_HEAD_TOKENS, PRUNE_TAIL_TOKENS, max_head_lines=12, max_tail_lines=6)
    total_lines = content.count("\n") + 1
    where = f"read_spill handle={spill['handle']}" if spill and spill.get("handle") else (
        f"the session log, event {event_id}" if event_id is not None else "the session log"
    )
    note = f"[pruned from view: {cut} of {total_lines} lines of old tool output cut — original kept in {where}]"
    return "\n".join([*head, note, *tail])


@dataclass(frozen=True)
class PruneCandidate:
    index: int  # position in the builder's message list
    event_id: int
    rank: int

    def sort_key(self) -> tuple[int, int]:
        return (self.rank, self.event_id)


def prune_order(candidates: list[PruneCandidate]) -> list[PruneCandidate]:
    """Lowest value first; ties oldest first."""
    return sorted(candidates, key=PruneCandidate.sort_key)
