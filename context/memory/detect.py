"""Rule-based detectors for constraints and decisions in user / assistant text, English and Chinese.

No model call. A constraint is a sentence the user wants honoured from now on ("never touch
config files", "不要修改配置文件"); a decision is a sentence that settles a choice ("we'll use
PostgreSQL", "决定用 PostgreSQL"). Each returns the matching sentences, trimmed.
"""

from __future__ import annotations

import re

_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]?")

CONSTRAINT_MARKERS_EN = re.compile(
    r"\b(remember|always|never|don't|do not|must not|mustn't|must|should never|from now on|make sure to|avoid)\b",
    re.IGNORECASE,
)
CONSTRAINT_MARKERS_ZH = re.compile(r"(记住|以后都|以后不要|不要|必须|禁止|不许|不准|不能|务必|一律|始终|永远不要)")

DECISION_MARKERS_EN = re.compile(
    r"\b(we'll use|we will use|let's use|let us use|decided|decide to|we chose|i chose|chose to|going with|"
    r"switch(?:ed)? to|instead of|we use|use .+ (?:instead|rather))\b",
    re.IGNORECASE,
)
DECISION_MARKERS_ZH = re.compile(r"(选择|决定|改用|采用|就用|换成|确定用|定为)")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text or "") if s.strip()]


def detect_constraints(text: str) -> list[str]:
    return [s for s in sentences(text) if CONSTRAINT_MARKERS_EN.search(s) or CONSTRAINT_MARKERS_ZH.search(s)]


def detect_decisions(text: str) -> list[str]:
    return [s for s in sentences(text) if DECISION_MARKERS_EN.search(s) or DECISION_MARKERS_ZH.search(s)]
