"""Rule-based detectors for constraints and decisions in user / assistant text, English and Chinese.

No model call. A constraint is a sentence the user wants honoured from now on ("never touch
config files", "不要修改配置文件"); a decision is a sentence that settles a choice ("we'll use
PostgreSQL", "决定用 PostgreSQL"). Each returns the matching sentences, trimmed.
"""

from __future__ import annotations

import re

# A sentence ends at . ! ? only before whitespace or the end, so "config.py" and "v2.0" stay whole.
_SENTENCE = re.compile(r"(?:[^.!?。！？\n]|[.!?](?=[^\s.!?]))+[.!?。！？]*")

CONSTRAINT_MARKERS_EN = re.compile(
    r"\b(remember|always|never|don't|do not|must not|mustn't|must|should never|from now on|make sure to|avoid)\b",
    re.IGNORECASE,
)
CONSTRAINT_MARKERS_ZH = re.compile(r"(记住|以后都|以后不要|不要|必须|禁止|不许|不准|不能|务必|一律|始终|永远不要)")

DECISION_MARKERS_EN = re.compile(
    r"\b(we'll use|we will use|let's use|let us use|decided|decide to|we chose|i chose|chose to|going with|"
    r"switch(?:ed)? to|we use|use .+ (?:instead|rather))\b",  # a bare "instead of" settles nothing: "grep instead of paging"
    re.IGNORECASE,
)
DECISION_MARKERS_ZH = re.compile(r"(选择|决定|改用|采用|就用|换成|确定用|定为|统一用|用.+代替|用.+而不是)")
# An imperative that settles a choice: "Use MySQL for the database.", "Go with option B."
DECISION_IMPERATIVE_EN = re.compile(
    r"^(?:ok(?:ay)?,?\s+|so,?\s+|actually,?\s+|please,?\s+|then,?\s+|no,?\s+)*"
    r"(?:use|switch to|go with|stick with|stick to|prefer|pick|adopt|migrate to|move to)\b",
    re.IGNORECASE,
)
# Questions settle nothing ("should we use MySQL?").
_QUESTION = re.compile(r"[?？]\s*$|^(?:should|shall|could|can|would|do|does|is|are|what|which|why|how)\b", re.IGNORECASE)

TODO_INLINE = re.compile(r"(?:^|(?<=[。.!?！？]))\s*(?:TODO|FIXME|待办)\s*[:：]\s*(?P<task>[^\n。]+)")
TODO_MARKER = re.compile(r"^\s*(?:[-*]\s*)?(?:\[ \]\s+|TODO\b[:：]?\s*|FIXME\b[:：]?\s*|待办[:：]\s*|待做[:：]\s*)(?P<task>.+)$")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text or "") if s.strip()]


def detect_constraints(text: str) -> list[str]:
    return [s for s in sentences(text) if CONSTRAINT_MARKERS_EN.search(s) or CONSTRAINT_MARKERS_ZH.search(s)]


def detect_decisions(text: str) -> list[str]:
    return [
        s for s in sentences(text)
        if not _QUESTION.search(s)
        and (DECISION_MARKERS_EN.search(s) or DECISION_MARKERS_ZH.search(s) or DECISION_IMPERATIVE_EN.search(s))
    ]


def detect_todos(text: str) -> list[str]:
    """Open tasks written as "TODO: …", "FIXME …", "- [ ] …" or "待办：…", one per line."""
    out: list[str] = []
    for line in (text or "").splitlines():
        m = TODO_MARKER.match(line)
        if m and m.group("task").strip():
            out.append(m.group("task").strip())
            continue
        out.extend(t.group("task").strip() for t in TODO_INLINE.finditer(line) if t.group("task").strip())
    return out
