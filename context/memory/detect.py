"""Rule-based detectors for constraints and decisions in user / assistant text, English and Chinese.

No model call. A constraint is a sentence the user wants honoured from now on ("never touch
config files", "不要修改配置文件"); a decision is a sentence that settles a choice ("we'll use
PostgreSQL", "决定用 PostgreSQL"), the speaker's own included ("I'll stick with the v1 schema",
"我们就用 SQLite": the agent's decisions, read off its replies; never the means of its next step,
"I'll use `sed` to patch it"). Each returns the matching sentences, trimmed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

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
# A choice the speaker states for their own work ("I'll stick with the v1 schema", "we're going to go with
# option B", "我们就用 SQLite", "我改用 JSON Lines"): the agent's own decisions, read off its replies. The
# object must not be the means of the next step ("I'll use `sed` to patch it", "我用 grep 查找"): that is a
# plan for one call, not a choice the session has to remember (`_STEP_PLAN`).
OWN_DECISION_EN = re.compile(
    r"\b(?:i|we)(?:\s*['’]ll|\s*['’]d rather|\s+will|\s+shall|\s*['’](?:m|re)\s+going\s+to|\s+am\s+going\s+to|"
    r"\s+are\s+going\s+to|\s+(?:have\s+)?decided\s+to)\s+(?:now\s+|instead\s+|just\s+|then\s+|still\s+|rather\s+)?"
    r"(?:use|go\s+with|stick\s+(?:with|to)|switch\s+(?:over\s+)?to|move\s+to|keep\s+using|settle\s+on|rely\s+on|adopt)\b",
    re.IGNORECASE,
)
OWN_DECISION_ZH = re.compile(r"(?:我们|我)(?:就|会|将|还是|打算|准备|先|统一|继续)?(?:改用|换用|选用|采用|使用|用)(?!户|途|法|来|于|了)")
# the means of one step: a command, a tool, a script ("use `sed` to …", "use a python script", "用 grep 查找")
_STEP_MEANS = re.compile(
    r"`?\b(?:sed|ed|awk|grep|rg|cat|curl|wget|python3?|bash|sh|shell|perl|echo|printf|find|ls|head|tail|git|jq|"
    r"scripts?|commands?|tools?|heredoc|editor|one-liner|temp(?:orary)?|subagents?|agents?|task|str_replace\w*|view|"
    r"read|edit|write|search|the \w+ tool)\b`?",
    re.IGNORECASE,
)
_STEP_GOAL = re.compile(r"\bto\s+(?:check|see|find|look|verify|inspect|confirm|debug|print|view|read|search|locate|"
                        r"list|explore|reproduce|run|show|examine|test|investigate|understand)\b", re.IGNORECASE)
_STEP_MEANS_ZH = re.compile(r"(?:sed|awk|grep|rg|cat|curl|python3?|bash|shell|脚本|命令|工具)|(?:查看|查找|搜索|读取|检查|看看|运行)")
MAX_MEANS_WORDS = 6  # how far after the verb the means of a step is looked for

# Questions settle nothing ("should we use MySQL?").
_QUESTION = re.compile(r"[?？]\s*$|^(?:should|shall|could|can|would|do|does|is|are|what|which|why|how)\b", re.IGNORECASE)

TODO_INLINE = re.compile(r"(?:^|(?<=[。.!?！？]))\s*(?:TODO|FIXME|待办)\s*[:：]\s*(?P<task>[^\n。]+)")
TODO_MARKER = re.compile(r"^\s*(?:[-*]\s*)?(?:\[ \]\s+|TODO\b[:：]?\s*|FIXME\b[:：]?\s*|待办[:：]\s*|待做[:：]\s*)(?P<task>.+)$")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text or "") if s.strip()]


def detect_constraints(text: str) -> list[str]:
    return [s for s in sentences(text) if CONSTRAINT_MARKERS_EN.search(s) or CONSTRAINT_MARKERS_ZH.search(s)]


def _own_decision(s: str) -> bool:
    """A choice the speaker states for their own work, not the means of their next step."""
    m = OWN_DECISION_EN.search(s)
    if m:
        after = " ".join(s[m.end():].split()[:MAX_MEANS_WORDS])
        return not (_STEP_MEANS.search(after) or _STEP_GOAL.search(s[m.end():]))
    z = OWN_DECISION_ZH.search(s)
    return z is not None and not _STEP_MEANS_ZH.search(s[z.end():])


def detect_decisions(text: str, documents: bool = False) -> list[str]:
    """Sentences that settle a choice. `documents`: the text is a document a tool read (a spec, an issue),
    whose imperatives say how to use a thing ("Use --verbose to see more"), not a choice: only its
    stated decisions count."""
    return [
        s for s in sentences(text)
        if not _QUESTION.search(s)
        and (DECISION_MARKERS_EN.search(s) or DECISION_MARKERS_ZH.search(s) or _own_decision(s)
             or (not documents and DECISION_IMPERATIVE_EN.search(s)))
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


def _document_items(text: str) -> Iterator[tuple[str, bool]]:
    """(a prose line of a document without its bullet, whether it is an item under a rules-like heading),
    in order. Code (fenced blocks, code-shaped lines), headings and blank lines are skipped."""
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
        if _prose(item):
            yield item, rules and bullet


def detect_requirements(text: str) -> list[str]:
    """Requirement sentences of a document, in order, once each: sentences with a requirement marker,
    and every item under a rules-like heading. Code (fenced blocks, code-shaped lines) is skipped."""
    out: dict[str, None] = {}
    for item, ruled in _document_items(text):
        if ruled:
            out.setdefault(item, None)
            continue
        for s in sentences(item):
            if _prose(s) and (REQUIREMENT_MARKERS_EN.search(s) or REQUIREMENT_MARKERS_ZH.search(s)):
                out.setdefault(s, None)
    return list(out)


def document_lines(text: str) -> list[str]:
    """What the session ledger quotes of a document a tool read (a spec, an issue): its requirement
    sentences, then the decisions it states ("we decided to …", "改用 …"; not its how-to imperatives),
    in order, once each. Data about the document, never instructions."""
    out = dict.fromkeys(detect_requirements(text))
    for item, _ in _document_items(text):
        for s in detect_decisions(item, documents=True):
            if _prose(s):
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
