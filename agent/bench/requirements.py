"""Requirement and decision lines: what a user feels lost when the context drops it.

Pure functions of text (no engine, no I/O), so that a requirement/decision ledger can reuse them.
This is the *benchmark's* definition, deliberately written apart from the memory detectors
(context/memory/detect.py): a ledger graded by its own detector would grade itself.

- A **requirement line** is a sentence that binds the work: it carries a marker — must, never,
  do not / don't, only, always, should not, make sure, required, "no <noun>" ("no ad-hoc SQL"),
  不要, 必须, 禁止, 只, 不得, 务必 … — or it is a bullet under a heading that announces rules
  ("Architecture constraints", "Definition of Done", "Important Boundaries", "约束", "要求").
- A **decision line** settles a choice: "let's use X", "we'll go with", "decided", "instead of",
  "switch to", 改用, 决定 …
- A **test failure line** names a failing test (pytest's `FAILED path::test`, unittest's
  `FAIL: test_x (mod.Class)`, ExUnit's `1) test name (Module)`, Go's `--- FAIL: TestX`): the test
  must pass, so it counts as a requirement.

Sources (see `lines_of_event`): user turns (requirements and decisions), the agent's own text
(decisions), and tool output that states requirements — a spec or issue read by a tool (an issue
tracker's `show`/`view`, a Markdown/text document, a web page) — plus test failure lines in any
tool output. Code is never a source: fenced blocks and code-shaped lines are skipped, and a tool
reading a source file is not a spec read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ctxagent.context.memory.detect import sentences
from ctxagent.context.memory.terms import normalize

_NO_NOUN_EXCEPTIONS = ("one", "longer", "matter", "problem", "idea", "doubt", "need", "way", "more", "further",
                       "other", "such", "of", "worries", "thanks", "issue", "issues", "changes", "output", "errors",
                       "error", "module", "such", "match", "matches", "files", "file", "results", "tests", "test")
REQUIREMENT_MARKERS = re.compile(
    r"\b(?:must(?:\s+not|n'?t)?|never|do\s+not|don'?t|only|always|should\s+not|shouldn'?t|make\s+sure|required|"
    r"no\s+(?!(?:" + "|".join(_NO_NOUN_EXCEPTIONS) + r")\b)[a-z][\w-]*)\b",
    re.IGNORECASE,
)
# 只 alone is a requirement ("只修改 src/"), 只是 / 只要 are "just" / "as long as"
REQUIREMENT_MARKERS_ZH = re.compile(r"不要|必须|禁止|只(?![是要])|不得|务必|不能|不许|不准|严禁|切勿|一律")
DECISION_MARKERS = re.compile(
    r"\b(?:let'?s\s+(?:use|go\s+with)|let\s+us\s+use|we'?ll\s+(?:use|go\s+with)|we\s+will\s+(?:use|go\s+with)|"
    r"i'?ll\s+(?:use|go\s+with)|i\s+will\s+(?:use|go\s+with)|going\s+with|go\s+with|decided|decide\s+to|"
    r"instead\s+of|rather\s+than|switch(?:ed|ing)?\s+to|opt(?:ed)?\s+for|chose|choose\s+to)\b",
    re.IGNORECASE,
)
DECISION_MARKERS_ZH = re.compile(r"改用|决定|采用|换成|就用|选用|统一用|定为")
# A heading whose bullets are rules even without a marker word.
RULE_HEADING = re.compile(
    r"constraint|requirement|rules?\b|guideline|acceptance|definition of done|boundar|must|invariant|"
    r"约束|要求|规则|注意|禁止|验收", re.IGNORECASE)
TEST_FAILURE = re.compile(
    r"^\s*(?:(?P<pytest>(?:FAILED|ERROR)\s+\S+::\S+)"
    r"|(?P<unittest>(?:FAIL|ERROR):\s+\w+\s+\([\w.]+\))"
    r"|(?P<go>---\s+FAIL:\s+\S+)"
    r"|\d+\)\s+(?P<exunit>test\s.+\([\w.]+\))\s*$)"
)
_LINE_NUMBER = re.compile(r"^\s*\d+(?:→|\t|:\s)")  # a Read tool's "  12→", cat -n's "12\t", a grep/spill "12: "
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|\[[ xX]\])\s+")
_HEADING_MD = re.compile(r"^\s*#{1,6}\s+(?P<title>.+?)\s*#*\s*$")
_HEADING_COLON = re.compile(r"^\s*(?:\*\*)?(?P<title>[^\n:：]{2,60}?)(?:\*\*)?\s*[:：]\s*(?:\*\*)?\s*$")
_HEADING_CAPS = re.compile(r"^\s*(?P<title>[A-Z][A-Z0-9 _&/-]{2,40})\s*$")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_CODE_LINE = re.compile(
    r"[{};]\s*$|^\s*(?://|/\*|#!|#\s*(?:include|define)\b|>>>|\$\s)"
    r"|^\s*(?:def|class|import|from\s+\S+\s+import|return|elif|function|const|let|var|fn|pub|defp?|end|@\w+)\b"
    r"|(?:==|!=|=>|->|::|\+=|&&|\|\||\)\s*\{)"
)
_WORDISH = re.compile(r"[A-Za-z\u4e00-\u9fff]")
MIN_TERMS = 3
MAX_CHARS = 400

SPEC_EXTENSIONS = frozenset({"md", "markdown", "rst", "txt", "adoc", "org", "textile"})
SPEC_TOOLS = frozenset({"webfetch", "web_fetch", "fetch", "read_url", "browse", "websearch", "web_search"})
# an issue tracker or review tool printing an item: `bd show X`, `gh issue view 12`, `issues show 11`, `jira view`
ISSUE_COMMAND = re.compile(
    r"(?:^|[\s;&|(])(?:bd|gh|glab|issues?|jira|linear|tea|hub)\s+(?:[\w-]+\s+){0,2}(?:show|view|read|get)\b")
_SHELL_READ = re.compile(r"(?:^|[\s;&|(])(?:cat|head|tail|less|more|sed|nl|bat|awk)\b[^|;&]*?([\w./~-]+\.(\w{1,8}))\b")


@dataclass(frozen=True)
class Line:
    """One requirement or decision line and where it came from."""

    kind: str  # "requirement" | "decision"
    origin: str  # "user" | "tool" (a spec or issue read by a tool) | "test" (a test failure) | "assistant"
    text: str
    event: int  # position of the source event in the trajectory


def _clean(line: str) -> str:
    line = _LINE_NUMBER.sub("", line, count=1)
    return _BULLET.sub("", line, count=1).strip().strip("*").strip()


def _is_code(line: str) -> bool:
    return bool(_CODE_LINE.search(line))


def _prose_enough(text: str) -> bool:
    if len(text) > MAX_CHARS or not _WORDISH.search(text):
        return False
    return len(normalize(text).split()) >= MIN_TERMS


def _heading(line: str) -> str | None:
    """The title if `line` is a heading (Markdown `#`, a short line ending in a colon, or ALL CAPS)."""
    if _BULLET.match(line):
        return None
    for pat in (_HEADING_MD, _HEADING_COLON, _HEADING_CAPS):
        m = pat.match(line)
        if m:
            return m.group("title")
    return None


def _prose_lines(text: str) -> Iterable[tuple[str, bool]]:
    """(cleaned line, under a rule heading and a bullet) for each non-code line outside fenced blocks."""
    fenced = False
    rules = False
    for raw in (text or "").splitlines():
        stripped = _LINE_NUMBER.sub("", raw, count=1)
        if _FENCE.match(stripped):
            fenced = not fenced
            continue
        if fenced or not stripped.strip():
            continue
        title = _heading(stripped)
        if title is not None:
            rules = bool(RULE_HEADING.search(title))
            continue
        if _is_code(stripped):
            continue
        yield _clean(stripped), rules and bool(_BULLET.match(stripped))


def _marked(sentence: str, en: re.Pattern[str], zh: re.Pattern[str]) -> bool:
    return bool(en.search(sentence) or zh.search(sentence))


def requirement_lines(text: str) -> list[str]:
    """Requirement sentences of `text`, in order, without repeats."""
    out: dict[str, None] = {}
    for line, ruled in _prose_lines(text):
        if ruled and _prose_enough(line):
            out.setdefault(line, None)  # a bullet under "Constraints:" is a rule as a whole
            continue
        for s in sentences(line):
            s = s.strip()
            if _prose_enough(s) and _marked(s, REQUIREMENT_MARKERS, REQUIREMENT_MARKERS_ZH):
                out.setdefault(s, None)
    return list(out)


def decision_lines(text: str) -> list[str]:
    """Decision sentences of `text`, in order, without repeats (questions settle nothing)."""
    out: dict[str, None] = {}
    for line, _ in _prose_lines(text):
        for s in sentences(line):
            s = s.strip()
            if s.endswith(("?", "？")) or not _prose_enough(s):
                continue
            if _marked(s, DECISION_MARKERS, DECISION_MARKERS_ZH):
                out.setdefault(s, None)
    return list(out)


def failing_test_lines(text: str) -> list[str]:
    """The failing tests named in a tool output (pytest, unittest, Go, ExUnit), in order, once each."""
    out: dict[str, None] = {}
    for raw in (text or "").splitlines():
        m = TEST_FAILURE.match(raw)
        if m:
            name = next(g for g in m.groups() if g)
            out.setdefault(name.split(" - ", 1)[0].strip(), None)
    return list(out)


def is_spec_read(name: str, arguments: Any) -> bool:
    """Whether a tool call reads a spec or an issue (prose the user expects honoured), not code."""
    if name.lower() in SPEC_TOOLS:
        return True
    if not isinstance(arguments, dict):
        return False
    for key, value in arguments.items():
        if not isinstance(value, str):
            continue
        if key in ("command", "cmd", "script", "input"):
            if ISSUE_COMMAND.search(value):
                return True
            if any(m.group(2).lower() in SPEC_EXTENSIONS for m in _SHELL_READ.finditer(value)):
                return True
        elif key in ("file_path", "path", "filename", "file", "url"):
            if key == "url" or value.rsplit(".", 1)[-1].lower() in SPEC_EXTENSIONS:
                return True
    return False


def lines_of_event(kind: str, data: dict[str, Any], event: int, call: dict[str, Any] | None = None) -> list[Line]:
    """The requirement and decision lines one session-log event states. `call`: for a tool result,
    the tool call it answers ({name, arguments}), which decides whether its output is a spec."""
    out: list[Line] = []
    if kind == "user":
        text = str(data.get("text") or "")
        out += [Line("requirement", "user", s, event) for s in requirement_lines(text)]
        out += [Line("decision", "user", s, event) for s in decision_lines(text)]
    elif kind == "assistant":
        out += [Line("decision", "assistant", s, event) for s in decision_lines(str(data.get("text") or ""))]
    elif kind == "tool_result":
        text = str(data.get("content") or "")
        if call is not None and is_spec_read(str(call.get("name") or ""), call.get("arguments")):
            out += [Line("requirement", "tool", s, event) for s in requirement_lines(text)]
            out += [Line("decision", "tool", s, event) for s in decision_lines(text)]
        out += [Line("requirement", "test", s, event) for s in failing_test_lines(text)]
    return out


@dataclass
class LineTracker:
    """Feeds a trajectory's events in order; keeps every distinct line stated so far (first statement wins)."""

    lines: list[Line] = field(default_factory=list)
    _keys: set[tuple[str, str]] = field(default_factory=set)
    _calls: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, kind: str, data: dict[str, Any], event: int) -> list[Line]:
        if kind == "assistant":
            for c in data.get("tool_calls") or []:
                self._calls[str(c.get("id"))] = c
        call = self._calls.get(str(data.get("call_id"))) if kind == "tool_result" else None
        new = []
        for line in lines_of_event(kind, data, event, call):
            key = (line.kind, normalize(line.text))
            if key not in self._keys:
                self._keys.add(key)
                self.lines.append(line)
                new.append(line)
        return new
