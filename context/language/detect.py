"""Rule-based detectors for constraints and decisions in user / assistant text, English and Chinese.

No model call. A constraint is a sentence the user wants honoured from now on ("never touch
config files", "不要修改配置文件"); a decision is a sentence that settles a choice ("we'll use
PostgreSQL", "决定用 PostgreSQL"), the speaker's own included ("I'll stick with the v1 schema",
"我们就用 SQLite": the agent's decisions, read off its replies; never the means of its next step,
"I'll use `sed` to patch it"). Each returns the matching sentences, trimmed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

# A sentence ends at . ! ? only before whitespace or the end, so "config.py" and "v2.0" stay whole.
_SENTENCE = re.compile(r"(?:[^.!?。！？\n]|[.!?](?=[^\s.!?]))+[.!?。！？]*")

CONSTRAINT_MARKERS_EN = re.compile(
    r"\b(remember|always|never|don't|do not|must not|mustn't|must|should never|from now on|make sure to|avoid)\b",
    re.IGNORECASE,
)
# 别 ("don't"), but not inside the words it only spells: 特别 区别 分别 别人 别的 …
_BIE = r"(?<![特区分类告级识差个性鉴辨派])别(?![人的处墅名致])"
CONSTRAINT_MARKERS_ZH = re.compile(rf"(记住|以后都|以后不要|不要|必须|禁止|严禁|不许|不准|不能|不得|切勿|务必|一律|始终|永远不要|{_BIE})")

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


# -- what governs a clause: negation, conditions and exceptions, contrast ----------------------------
# A clause of the user's sentence restates the user on its own only with its sentence's polarity
# (provenance.said_by_user): in "Never, under any circumstances, push to main." the clause "push to
# main" is under the sentence's negation, and in "Push to main, unless CI is red." under its
# condition. The words below are how such a clause is recognised, English and Chinese. Every mistake
# they can make refuses a piece (a line then simply does not bind), except `LEADS_NEGATED`, which
# lets a clause that opens with its own negation ("…, and never force-push") stand alone: it is
# strict on purpose (the negation must come first, so "push to main without asking" does not qualify).
_NEG_EN = (r"under\s+no\s+circumstances?|in\s+no\s+case|by\s+no\s+means|on\s+no\s+account|not|no|never|nor|neither|"
           r"none|nothing|nobody|nowhere|without|cannot|avoid\w*|stop(?:s|ped|ping)?|quit|cease|refrain\w*|forbid\w*|"
           r"prohibit\w*|ban(?:s|ned|ning)?|disallow\w*|"
           r"(?:do|does|did|is|are|was|were|must|should|could|would|need|have|has|ca|wo|sha|may|might)n['’]?t")
# 不 without the words it only spells (不同 不过 不仅 不但 不管 不论 …), 别 as in the markers above
_NEG_ZH = rf"禁止|严禁|切勿|避免|停止|无需|无须|无法|不(?![同过仅但管论断久少错如妨])|{_BIE}|勿|没|未(?!来)|莫|甭"
NEGATION = re.compile(rf"\b(?:{_NEG_EN})\b|{_NEG_ZH}", re.IGNORECASE)
# Conditions and exceptions: a clause outside them is only part of what the user said.
SCOPE = re.compile(
    r"\b(?:if|unless|except|excepting|excluding|only|other\s+than|apart\s+from|aside\s+from|but\s+for|when|"
    r"whenever|until|till|provided|providing|as\s+long\s+as|so\s+long\s+as|in\s+case|otherwise|else)\b"
    r"|除非|除了|除去|以外|之外|只有|只要|只能|只|仅|如果|要是|假如|假设|若(?!干)|倘若|一旦|否则|不然|"
    r"当(?![前然中地下天初年做作成心场])", re.IGNORECASE)
# A contrast ends a negation's reach: "Don't delete the logs, but archive them." / "不要删除，而是归档".
CONTRAST = re.compile(r"^\s*(?:but|however|instead|rather|yet)\b[\s,]*|^\s*(?:但是|但|可是|不过|然而|而是|反而)", re.IGNORECASE)
# Emphasis that neither negates nor says what to do; "no matter what" and 无论/不管 are concessive,
# not negations. (Never "under no circumstances": that one negates.)
EMPHASIS = re.compile(
    r"\b(?:under\s+any\s+circumstances?|in\s+any\s+case|no\s+matter\s+(?:what|how|when|who|where)|for\s+any\s+reason|"
    r"at\s+all|whatsoever|ever(?:\s+again)?|even|once|absolutely|definitely|really|seriously|please|kindly|repeat)\b"
    r"|无论如何|无论|不管怎样|不管|任何情况下|任何时候|千万|万万|绝对|一定|务必|永远|再次|请", re.IGNORECASE)
# Small words that may open a clause before its negation: "and you must never …", "我们也不要 …".
_HEAD_EN = (r"(?:(?:and|also|or|so|then|just|you|we|i|they|it|it's|this|that|must|should|shall|will|would|can|could|"
            r"may|might|need|do|does|did|is|are|be|to)\s+)*")
_HEAD_ZH = r"(?:[也还并且你您我们都就再更又亦]|以后|今后|从此|从今以后)*"
LEADS_NEGATED = re.compile(rf"^\s*(?:{_HEAD_EN}(?:{_NEG_EN})\b|{_HEAD_ZH}(?:{_NEG_ZH}))", re.IGNORECASE)
_SMALL = re.compile(r"\b(?:and|also|or|so|then|just|you|we|i|they|it|this|that|must|should|shall|will|would|can|"
                    r"could|may|might|need|do|does|did|is|are|be|to|the|a|an)\b|[也还并且你您我们都就再更又亦要能准得许可应该用必须]|\W|_",
                    re.IGNORECASE)
# "No, push to main." / "不，推送到主分支": an answer, not a negation of what follows.
_INTERJECTION = re.compile(r"^\s*(?:no|nope|nah|not|不|不是|没有|没)\s*$", re.IGNORECASE)
# Where a sentence is cut into clauses, and which cuts are a contrast.
CLAUSE_BREAK = re.compile(r"([,;:，；：、]|\band\b|\bbut\b|然后|并且|但是)")
_CONTRAST_BREAKS = frozenset({"but", "但是"})
_LEAD_IN_END = (":", "：")
QUESTION_END = ("?", "？")  # a sentence ending so asks: it sets no rule


@dataclass(frozen=True)
class Clause:
    """One clause of a sentence, read for what can govern another clause or be governed."""

    text: str
    contrast: bool  # opens with "but", "instead", 但是 …: a negation before it does not reach it
    negated: bool  # holds a negation anywhere: it may govern the clauses after it
    leads_negated: bool  # opens with its own negation: it states its own polarity
    scoped: bool  # holds a condition or an exception
    content: bool  # says something beyond negation, emphasis and small words

    @property
    def bare(self) -> bool:
        """Only a negation ("Never", "Don't ever", "千万别"): it governs its whole sentence."""
        return self.negated and not self.content

    @property
    def composable(self) -> bool:
        """A bare negation that is not an answer ("No, …"): it joins the clause it governs."""
        return self.bare and not _INTERJECTION.match(EMPHASIS.sub(" ", self.text).strip(" ,.!"))


def read_clause(text: str, contrast: bool = False) -> Clause:
    flat = _DOC_BULLET.sub("", unicodedata.normalize("NFKC", text).casefold().replace("’", "'"), count=1)
    if (m := CONTRAST.match(flat)) is not None:
        contrast, flat = True, flat[m.end():]
    plain = EMPHASIS.sub(" ", flat)
    rest = _SMALL.sub("", SCOPE.sub(" x ", NEGATION.sub(" ", plain)))
    return Clause(text.strip(), contrast, bool(NEGATION.search(plain)), bool(LEADS_NEGATED.match(plain)),
                  bool(SCOPE.search(plain)), bool(rest))


def clauses(sentence: str) -> list[Clause]:
    """The clauses of a sentence, cut at commas, colons, semicolons, 、, "and", "but", 然后, 并且, 但是."""
    out: list[Clause] = []
    contrast = False
    for i, part in enumerate(CLAUSE_BREAK.split(sentence)):
        if i % 2:
            contrast = contrast or part in _CONTRAST_BREAKS
        elif part.strip():
            clause = read_clause(part, contrast)
            out.append(clause)
            # a lone "however", "instead", 不过: the contrast is the next clause's
            contrast = clause.contrast and not clause.content and not clause.negated
    return out


def _clause_pieces(parts: list[Clause], lead: Clause | None) -> list[str]:
    """The clauses of one sentence that carry its polarity by themselves: no condition or exception
    elsewhere in the sentence or its lead-in, and no negation that reaches them — a bare one anywhere,
    the lead-in's, or one in an earlier clause with no contrast between — unless they open with their
    own. A clause that only the one bare negation reaches is joined to it, as the user meant it
    ("Never, under any circumstances, push to main." → "Never push to main"). Linear in the clauses."""
    lead_negated, lead_scoped = lead is not None and lead.negated, lead is not None and lead.scoped
    scoped, bare = sum(p.scoped for p in parts), sum(p.bare for p in parts)
    marked = [j for j, p in enumerate(parts) if p.negated or p.scoped] + ([-1] if lead_negated or lead_scoped else [])
    out: list[str] = []
    force = False  # a negation since the last contrast: it reaches the next clause
    for i, me in enumerate(parts):
        reached = force and not me.contrast
        force = me.negated if me.contrast else force or me.negated
        if not me.content or lead_scoped or scoped - me.scoped:
            continue
        if me.leads_negated or not (lead_negated or bare - me.bare or reached):
            out.append(me.text)
            continue
        if me.scoped or len(marked) - me.negated != 1:  # one governor, and it is not this clause
            continue
        j = next(j for j in marked if j != i)  # `marked` holds two entries at most here
        governor = lead if j == -1 else parts[j]
        negation = EMPHASIS.sub(" ", governor.text) if governor is not None and governor.composable else ""
        if len(NEGATION.findall(negation)) == 1:
            out.append(f"{negation.strip(' ,.!:：，')} {me.text}")
    return out


def restatable_pieces(text: str) -> list[str]:
    """The sentences and clauses of a user's text a line may restate on its own, each only with its
    sentence's polarity and scope (see `_clause_pieces`), plus a clause joined to the bare negation that
    governs it ("Never push to main"). A sentence after a lead-in that ends with a colon ("Never do
    these:", "禁止：") is governed by it until the paragraph ends. A question is no piece."""
    out: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text or ""):
        lead: Clause | None = None
        for sentence in sentences(paragraph):
            if sentence.rstrip().endswith(QUESTION_END):
                continue  # a question asks; it sets no rule, nor does any clause of it
            if lead is None or not (lead.negated or lead.scoped):
                out.append(sentence)
            else:  # under a lead-in that governs it: only with its own negation, or joined to the lead-in's
                out += _clause_pieces([read_clause(sentence)], lead)
            if CLAUSE_BREAK.search(sentence):
                out += _clause_pieces(clauses(sentence), lead)
            if sentence.rstrip().endswith(_LEAD_IN_END):
                head = read_clause(sentence.rstrip()[:-1])
                lead = head if lead is None else Clause(head.text, False, head.negated or lead.negated,
                                                        head.leads_negated, head.scoped or lead.scoped, True)
    return out
