"""Prune: cut old tool results to head/tail in the VIEW only (no model call, the log is untouched).
Old tool calls' long arguments (file contents written, text replaced) are cut the same way.

Order: lowest value first (errors, failed searches, bare acknowledgements), then oldest first.
The builder re-measures after each cut and stops as soon as the request fits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

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


# a path or file name with an extension (src/app.py, README.md, 报告.txt): what an agent looks up again
_FILE_NAME = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7}(?![\w/-])")
MAX_NAMED_FILES = 24


def files_named(text: str, limit: int = MAX_NAMED_FILES) -> list[str]:
    """Distinct file names (basename of each path) in `text`, in order of first mention, at most `limit`."""
    names: dict[str, None] = {}
    for m in _FILE_NAME.finditer(text):
        name = m.group(0).rstrip(".").rsplit("/", 1)[-1]
        if "." in name.strip(".") and not name.replace(".", "").isdigit():
            names.setdefault(name, None)
            if len(names) >= limit:
                break
    return list(names)


def _files_note(text: str, shown: str) -> str:
    """Names in `text` that the shown head/tail do not already carry: the cut part's pointers."""
    names = [n for n in files_named(text, 4 * MAX_NAMED_FILES) if n not in shown][:MAX_NAMED_FILES]
    return f" files named in the cut part: {', '.join(names)}" if names else ""


def pruned_text(content: str, counter: TokenCounter, event_id: int | None, spill: dict | None = None) -> str:
    """Head and tail of an old tool result plus a note of what was cut and where the original is."""
    head, tail, cut = head_tail(content, counter, PRUNE_HEAD_TOKENS, PRUNE_TAIL_TOKENS, max_head_lines=12, max_tail_lines=6)
    total_lines = content.count("\n") + 1
    files = _files_note(content, "\n".join([*head, *tail])) if cut else ""
    where = f"read_spill handle={spill['handle']}" if spill and spill.get("handle") else (
        f"read_event id={event_id}" if event_id is not None else "the session log"
    )
    note = f"[pruned from view: {cut} of {total_lines} lines of old tool output cut — the original: {where}.{files}]"
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


ARG_KEEP_CHARS = 600  # a tool-call argument longer than this is cut in an old step's view
ARG_HEAD_CHARS = 300
ARG_TAIL_CHARS = 120


def pruned_arguments(arguments: dict[str, Any], event_id: int | None) -> dict[str, Any]:
    """An old tool call's arguments with every long string value (a Write's content, an Edit's
    old/new text) cut to head and tail. Short values — paths, patterns, commands — stay verbatim."""
    out: dict[str, Any] = {}
    where = f"read_event id={event_id}" if event_id is not None else "the session log"
    for key, value in arguments.items():
        if isinstance(value, str) and len(value) > ARG_KEEP_CHARS:
            cut = len(value) - ARG_HEAD_CHARS - ARG_TAIL_CHARS
            note = _files_note(value, value[:ARG_HEAD_CHARS] + value[-ARG_TAIL_CHARS:])
            out[key] = (f"{value[:ARG_HEAD_CHARS]}\n[pruned from view: {cut} chars of this argument cut — "
                        f"the original: {where}.{note}]\n{value[-ARG_TAIL_CHARS:]}")
        else:
            out[key] = value
    return out
