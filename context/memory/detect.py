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


# -- requirements stated in documents (specs, issues, READMEs) and failing tests ---------------------
# A requirement binds the work: modal and prohibitive words, English and Chinese. Used on prose a tool
# returned (an issue tracker's `show`, a Markdown spec) to keep those lines in the session ledger once
# the document itself is pruned from view; never used to make tool text binding.
REQUIREMENT_MARKERS_EN = re.compile(
    r"\b(?:must|mustn'?t|never|always|only|do not|don'?t|does not|doesn'?t|should(?:n'?t| not)?|shall|required?|"
    r"requires|make sure|ensure|avoid|forbidden|not allowed|no longer|at least|at most|without|instead of|"
    r"acceptance|invariant|constraint)\b",
    re.IGNORECASE,
)
REQUIREMENT_MARKERS_ZH = re.compile(r"不要|必须|禁止|不得|务必|不能|不许|不准|严禁|切勿|一律|应当|应该|需要|确保|只能|只允许|至少|至多|不应")
# A heading whose items are rules as a whole ("Acceptance criteria:", "## Constraints", "验收标准").
RULE_HEADING = re.compile(
    r"requirement|constraint|acceptance|criteria|definition of done|rules?\b|guideline|boundar|invariant|"
    r"must|scope|non-goal|要求|约束|规则|验收|注意|禁止|范围", re.IGNORECASE)
_DOC_HEADING = re.compile(r"^\s*(?:#{1,6}\s+(?P<md>.+?)\s*#*|(?P<colon>[^\n:：]{2,60}?)\s*[:：]|(?P<caps>[A-Z][A-Z0-9 _&/-]{2,40}))\s*$")
_DOC_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|\[[ xX]\])\s+")
_DOC_FENCE = re.compile(r"^\s*(?:```|~~~)")
_LINE_PREFIX = re.compile(r"^\s*\d+(?:→|\t|:\s)")  # numbered output: Read's "12→", cat -n's "12\t", "12: "
_CODE_SHAPED = re.compile(
    r"[{};]\s*$|^\s*(?://|/\*|#!|>>>|\$\s)|^\s*(?:def|class|import|from\s+\S+\s+import|return|function|const|let|var|fn)\b"
    r"|(?:==|!=|=>|->|::|\+=|&&|\|\|)"
)
_WORD = re.compile(r"[A-Za-z]{2,}|[\u4e00-\u9fff]")
MAX_REQUIREMENT_CHARS = 400

FAILING_TEST = re.compile(
    r"^\s*(?:(?:FAILED|ERROR)\s+\S+::\S+|(?:FAIL|ERROR):\s+\w+\s+\([\w.]+\)|---\s+FAIL:\s+\S+|\d+\)\s+test\s.+\([\w.]+\)\s*$"
    r"|✗\s+\S.*|FAIL\s+\S+\.(?:test|spec)\.\w+)"
)


def _prose(line: str) -> bool:
    return len(line) <= MAX_REQUIREMENT_CHARS and len(_WORD.findall(line)) >= 3 and not _CODE_SHAPED.search(line)


def detect_requirements(text: str) -> list[str]:
    """Requirement sentences of a document, in order, once each: sentences with a requirement marker,
    and every item under a rules-like heading. Code (fenced blocks, code-shaped lines) is skipped."""
    out: dict[str, None] = {}
    fenced = rules = False
    for raw in (text or "").splitlines():
        line = _LINE_PREFIX.sub("", raw, count=1)
        if _DOC_FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or not line.strip():
            continue
        bullet = bool(_DOC_BULLET.match(line))
        heading = None if bullet else _DOC_HEADING.match(line)
        if heading:
            rules = bool(RULE_HEADING.search(next(g for g in heading.groups() if g)))
            continue
        item = _DOC_BULLET.sub("", line, count=1).strip().strip("*").strip()
        if not _prose(item):
            continue
        if rules and bullet:
            out.setdefault(item, None)
            continue
        for s in sentences(item):
            if _prose(s) and (REQUIREMENT_MARKERS_EN.search(s) or REQUIREMENT_MARKERS_ZH.search(s)):
                out.setdefault(s, None)
    return list(out)


def failing_tests(text: str) -> list[str]:
    """Lines naming a failing test (pytest, unittest, Go, ExUnit, Jest/Vitest), in order, once each."""
    out: dict[str, None] = {}
    for raw in (text or "").splitlines():
        line = _LINE_PREFIX.sub("", raw, count=1)
        if FAILING_TEST.match(line):
            out.setdefault(line.strip()[:300], None)
    return list(out)
