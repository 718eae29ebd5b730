"""Prune: cut old tool traffic in the VIEW only (no model call, the log is untouched).

Two shapes of cut, both naming where the original is (read_event / read_spill) and the files the cut
part named:
- a preview (`pruned_text`): a result's head and tail lines — what the fit-the-limit tiers make,
  lowest value first (errors, failed searches, bare acknowledgements), then oldest first, stopping
  as soon as the request fits;
- a clear (`cleared_text`, `cleared_arguments`): one line for a result, plus the failing tests it
  reported; a call keeps its paths and short arguments — what the tools-slice rule makes, oldest
  first (context/builder/slice_relief.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ctxagent.context.language.detect import failing_tests
from ctxagent.context.spill import head_tail
from ctxagent.context.tokens import TokenCounter
from ctxagent.context.tool_meta import PATH_ARGS

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


FILES_NOTE = "files named in the cut part"  # a cut's list of pointers (bench/presence.py leaves it out of its measures)


def _files_note(text: str, shown: str) -> str:
    """Names in `text` that the shown head/tail do not already carry: the cut part's pointers."""
    names = [n for n in files_named(text, 4 * MAX_NAMED_FILES) if n not in shown][:MAX_NAMED_FILES]
    return f" {FILES_NOTE}: {', '.join(names)}" if names else ""


def pruned_text(content: str, counter: TokenCounter, event_id: int | None, spill: dict[str, Any] | None = None) -> str:
    """Head and tail of an old tool result plus a note of what was cut and where the original is."""
    head, tail, cut = head_tail(content, counter, PRUNE_HEAD_TOKENS, PRUNE_TAIL_TOKENS, max_head_lines=12, max_tail_lines=6)
    total_lines = content.count("\n") + 1
    files = _files_note(content, "\n".join([*head, *tail])) if cut else ""
    note = f"[pruned from view: {cut} of {total_lines} lines of old tool output cut — the original: {_where(event_id, spill)}.{files}]"
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


CLEARED_KEEP_CHARS = 200  # a cleared call's argument up to this long stays whole (commands, patterns)
CLEARED_HEAD_CHARS = 80  # ... a longer one (a Write's content, an Edit's text) keeps this much of its head
CLEARED_FAILURES = 5  # failing-test lines a cleared result still shows


def _where(event_id: int | None, spill: dict[str, Any] | None = None) -> str:
    if spill and spill.get("handle"):
        return f"read_spill handle={spill['handle']}"
    return f"read_event id={event_id}" if event_id is not None else "the session log"


def cleared_text(content: str, name: str | None, event_id: int | None, spill: dict[str, Any] | None = None) -> str:
    """An old tool result cleared from view: one line saying what it was, where the original is and
    the files it named, then the failing tests it reported (an unresolved error is what a later step
    still needs from an old run)."""
    lines = content.count("\n") + 1
    names = files_named(content)
    files = f"; {FILES_NOTE}: {', '.join(names)}" if names else ""
    stub = f"[cleared: old {name or 'tool'} output, {lines} line{'s' if lines != 1 else ''} — {_where(event_id, spill)}{files}]"
    return "\n".join([stub, *failing_tests(content)[:CLEARED_FAILURES]])


def cleared_arguments(arguments: dict[str, Any], event_id: int | None) -> dict[str, Any]:
    """An old call's arguments cleared from view: paths and short values whole (what was done to
    which file), a long value (a Write's content, an Edit's text) its first characters."""
    out: dict[str, Any] = {}
    for key, value in arguments.items():
        if isinstance(value, str) and len(value) > CLEARED_KEEP_CHARS and key not in PATH_ARGS:
            out[key] = f"{value[:CLEARED_HEAD_CHARS]}\n[cleared — {_where(event_id)}]"
        else:
            out[key] = value
    return out
