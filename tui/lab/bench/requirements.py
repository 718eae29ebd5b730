"""Requirement and decision lines: what a user feels lost when the context drops it.

This is the *benchmark's* rule, and it shares no code and no pattern with the product: the product's
ledger quotes lines its own detectors find (context/language/detect.py, context/tool_meta.py), so a
measure built on those detectors would grade the ledger with itself. Nothing here is imported from
the product; the word lists below are the bench's own, with entries the product's do not have
(tests/bench/test_requirements.py checks both). Pure functions of text, English and Chinese.

- A **requirement line** is a sentence that binds the work. It carries a phrase of one of five kinds
  (`REQUIREMENT_PHRASES`): an obligation ("must", "has to", "is required to", "mandatory", 必须),
  a prohibition ("do not", "never", "may not", "is not allowed", "prohibited", 不要, 禁止), a
  restriction ("only", "exclusively", "no more than", "limited to", 只能, 仅), a preservation
  ("backward compatible", "preserve", "keep / leave … stable / unchanged / working", 保持) or an
  assurance ("make sure", "ensure", 确保); or it says "no <noun>" ("no ad-hoc SQL"); or it is a bullet
  under a heading that
  announces rules (`RULE_HEADINGS`: "Constraints", "Acceptance criteria", "Restrictions",
  "Expected behavior", 约束, 限制 …), taken whole.
- A **decision line** settles a choice (`DECISION_PHRASES`): "let's use X", "we'll go with",
  "decided to", "settled on", "opted for", "in favor of", "switch to", 改用, 决定 … A question
  settles nothing.
- A **failing-test line** names a failing test, read per runner (`failing_test_lines`): pytest's
  summary (`FAILED path::test`) and verbose (`path::test FAILED`) lines, unittest's
  `FAIL: test_x (mod.Class)`, Go's `--- FAIL: TestX`, ExUnit's `1) test name (Module)`, Cargo's
  `test a::b ... FAILED`, Jest's `● Suite › test`, RSpec's `rspec ./spec/x_spec.rb:12`. The test must
  pass, so it counts as a requirement.

Sentences end at . ! ? ; followed by a space, and at 。！？；. Code is never a source: fenced blocks and
code-shaped lines are skipped (`looks_like_code`), and a tool reading a source file is not a spec read.

Sources (`lines_of_event`): user turns (requirements and decisions), the agent's own text
(decisions), tool output that is a spec or an issue (`is_spec_read`: an issue tracker printing an
item, a document read, a web page) for both, and failing-test lines of any tool output.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

# -- the word lists (the bench's own) --------------------------------------------------------------
REQUIREMENT_PHRASES: dict[str, tuple[str, ...]] = {
    "obligation": ("must", "has to", "have to", "needs to", "need to", "is required", "are required", "required to",
                   "is mandatory", "mandatory", "shall", "is expected to", "are expected to", "should"),
    "prohibition": ("must not", "do not", "don't", "does not need", "never", "may not", "cannot", "can't", "should not",
                    "shouldn't", "is not allowed", "are not allowed", "not permitted", "prohibited", "forbidden",
                    "refrain from", "under no circumstances", "avoid"),
    "restriction": ("only", "exclusively", "no more than", "no less than", "limited to", "restricted to", "at most",
                    "at least", "solely"),
    "preservation": ("unchanged", "untouched", "intact", "backward compatible", "backwards compatible",
                     "backward-compatible", "preserve", "preserved", "remain stable", "stay compatible"),
    "assurance": ("make sure", "ensure", "be sure to", "guarantee", "verify that"),
}
REQUIREMENT_PHRASES_ZH: tuple[str, ...] = ("必须", "必需", "务必", "须", "不要", "不得", "禁止", "不能", "不可", "不允许", "不许",
                                           "严禁", "切勿", "勿", "只能", "仅", "只", "保持", "保留", "确保", "应当", "一律")
# a phrase inside one of these compounds says something else: 只是 "just", 只要 "as long as", 只有 "only if"
# (a condition), 不仅 "not only", 无须 "need not"
ZH_NOT_BINDING: dict[str, tuple[str, ...]] = {"只": ("只是", "只要", "只有"), "仅": ("不仅", "仅仅是"), "须": ("无须", "毋须")}
# "no <noun>" binds ("no ad-hoc SQL", "no new dependencies"), unless the noun makes it a remark
NO_NOUN_REMARKS = frozenset("""
one longer matter problem problems idea doubt need way more further other such of worries thanks issue issues changes
output errors error module match matches files file results result tests test luck wonder surprise reason big
""".split())
DECISION_PHRASES: tuple[str, ...] = (
    "let's use", "let's go with", "let us use", "let's switch", "we'll use", "we will use", "we'll go with",
    "we will go with", "i'll use", "i will use", "i'll go with", "going with", "go with", "decided to", "decided on",
    "we decided", "the decision is", "we chose", "i chose", "chose to", "opted for", "opting for", "settled on",
    "switch to", "switching to", "switched to", "migrate to", "in favor of", "in favour of", "rather than",
    "instead of", "the plan is to",
)
DECISION_PHRASES_ZH: tuple[str, ...] = ("改用", "决定", "采用", "换成", "就用", "选用", "选定", "定为", "统一用", "改为",
                                        "替换为", "方案是")
RULE_HEADINGS: tuple[str, ...] = (
    "requirements", "requirement", "constraints", "constraint", "rules", "acceptance criteria", "definition of done",
    "guidelines", "restrictions", "limitations", "conditions", "boundaries", "invariants", "policy", "policies",
    "checklist", "expected behavior", "expected behaviour", "must have", "non-negotiable", "do's and don'ts",
    "要求", "约束", "规则", "限制", "验收", "注意事项", "规范", "条件",
)
ISSUE_TOOLS: tuple[str, ...] = ("gh", "glab", "bd", "jira", "linear", "issues", "issue", "tea", "hub", "az", "youtrack",
                                "redmine", "bugzilla", "trac", "asana", "shortcut")
ISSUE_VERBS: tuple[str, ...] = ("show", "view", "read", "get", "describe", "info", "cat", "print")
SPEC_EXTENSIONS: tuple[str, ...] = ("md", "markdown", "rst", "txt", "adoc", "asciidoc", "org", "textile", "mdx", "wiki",
                                    "rdoc", "pod")
SPEC_NAMES: tuple[str, ...] = ("readme", "contributing", "changelog", "agents", "claude", "spec", "todo", "notes",
                               "design", "requirements")
WEB_TOOLS: tuple[str, ...] = ("webfetch", "web_fetch", "fetch", "fetch_url", "read_url", "browse", "websearch",
                              "web_search", "open_url")
FILE_READERS: tuple[str, ...] = ("cat", "head", "tail", "less", "more", "bat", "nl", "sed", "awk", "view", "glow", "mdcat")
PATH_KEYS: tuple[str, ...] = ("file_path", "path", "filename", "file", "notebook_path", "url")
COMMAND_KEYS: tuple[str, ...] = ("command", "cmd", "script", "input")
WRITE_TOOLS: tuple[str, ...] = ("write", "edit", "multiedit", "write_file", "edit_file", "create_file", "notebookedit")

MIN_WORDS = 3
MAX_CHARS = 400
_CODE_STARTS = ("def ", "class ", "import ", "from ", "return", "elif ", "else:", "if (", "for (", "while (",
                "function ", "const ", "let ", "var ", "fn ", "pub ", "public ", "private ", "#include", "#define",
                "package ", "using ", "try:", "except", "raise ", "yield ", "async ", "await ", ">>>", "$ ", "//", "/*",
                "#!", "@")
_CODE_PIECES = ("==", "!=", "=>", "->", "::", "+=", "-=", "&&", "||", "();", "){", "{}", "[]", "</", "/>")
_CODE_ENDS = ("{", "}", ";", "(", "[", "\\")
_SENTENCE_ENDS = ".!?;"
_SENTENCE_ENDS_ZH = "。！？；"


@dataclass(frozen=True)
class Line:
    """One requirement or decision line and where it came from."""

    kind: str  # "requirement" | "decision"
    origin: str  # "user" | "tool" (a spec or issue read by a tool) | "test" (a test failure) | "assistant"
    text: str
    event: int  # position of the source event in the trajectory


# -- text shapes -------------------------------------------------------------------------------------
def _phrase_pattern(phrases: Iterable[str]) -> re.Pattern[str]:
    """Whole-word, case-blind alternation of `phrases` (longest first), spaces matching any run of spaces."""
    alts = sorted({p.lower() for p in phrases}, key=len, reverse=True)
    body = "|".join(re.escape(p).replace("\\ ", r"\s+").replace("'", "['’]") for p in alts)
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{body})(?![A-Za-z0-9_])", re.IGNORECASE)


# "keep X stable", "leave the API as is": a verb of keeping, then within five words the state to keep
KEEP_VERBS: tuple[str, ...] = ("keep", "keeps", "leave", "retain", "maintain")
KEPT_STATES: tuple[str, ...] = ("unchanged", "stable", "intact", "working", "compatible", "as is", "as-is", "the same",
                                "green", "passing", "in place", "in sync")
_REQUIREMENT = _phrase_pattern(p for group in REQUIREMENT_PHRASES.values() for p in group)
_KEEP = re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(KEEP_VERBS) + r")\s+(?:\S+\s+){0,5}?(?:"
                   + "|".join(re.escape(x).replace("\\ ", r"\s+") for x in KEPT_STATES) + r")(?![A-Za-z0-9_])",
                   re.IGNORECASE)
_DECISION = _phrase_pattern(DECISION_PHRASES)
_NO_NOUN = re.compile(r"(?<![A-Za-z0-9_])no\s+([a-z][a-z-]*)", re.IGNORECASE)


def strip_numbering(line: str) -> str:
    """A line without a file viewer's number ("  12→", cat -n's "    12\t", a grep's "12: ")."""
    body = line.lstrip(" ")
    digits = len(body) - len(body.lstrip("0123456789"))
    if digits and digits <= 7:
        rest = body[digits:]
        for sep in ("→", "\t", ": "):
            if rest.startswith(sep):
                return rest[len(sep):]
    return line


def _bullet_body(line: str) -> str | None:
    """The text of a list item ("- x", "* x", "+ x", "• x", "1. x", "2) x", "[ ] x"), or None."""
    s = line.lstrip()
    for mark in ("- ", "* ", "+ ", "• ", "[ ] ", "[x] ", "[X] "):
        if s.startswith(mark):
            return s[len(mark):].strip()
    digits = len(s) - len(s.lstrip("0123456789"))
    if 0 < digits <= 3 and s[digits:digits + 2] in (". ", ") "):
        return s[digits + 2:].strip()
    return None


def _heading_title(line: str) -> str | None:
    """The title if `line` is a heading: Markdown "# …", "**Title**", a short line ending in a colon, or
    a short line in capitals."""
    s = line.strip()
    if not s or _bullet_body(s) is not None:
        return None
    if s.startswith("#"):
        title = s.lstrip("#").strip().rstrip("#").strip()
        return title or None
    if s.startswith("**") and s.endswith("**") and len(s) > 4:
        return s.strip("*").strip().rstrip(":：").strip()
    if s.endswith((":", "：")) and len(s) <= 60:
        return s.rstrip(":：").strip("* ").strip() or None
    letters = [c for c in s if c.isalpha()]
    if 3 <= len(s) <= 40 and letters and all(c.isupper() for c in letters) and s[0].isalpha():
        return s
    return None


def looks_like_code(line: str) -> bool:
    """Whether a line is code rather than prose: a code keyword first, code punctuation in it or at its end,
    or more than a quarter of its characters symbols."""
    s = line.strip()
    if not s:
        return False
    if s.startswith(_CODE_STARTS) or s.endswith(_CODE_ENDS) or any(p in s for p in _CODE_PIECES):
        return True
    symbols = sum(1 for c in s if not (c.isalnum() or c.isspace() or c in ".,:'\"-!?()`/’，。、：；！？（）"))
    return symbols * 4 > len(s)


def _word_count(text: str) -> int:
    words = sum(1 for w in text.split() if any(c.isalpha() and c.isascii() for c in w))
    cjk = sum(1 for c in text if "\u4e00" <= c <= "\u9fff")
    return words + (cjk + 1) // 2


def _prose(text: str) -> bool:
    return len(text) <= MAX_CHARS and _word_count(text) >= MIN_WORDS


def split_sentences(text: str) -> list[str]:
    """Sentences of one line: cut after . ! ? ; when a space follows, and after 。！？；."""
    out: list[str] = []
    start = 0
    n = len(text)
    for i, c in enumerate(text):
        if c in _SENTENCE_ENDS_ZH or (c in _SENTENCE_ENDS and (i + 1 == n or text[i + 1] in " \t")):
            piece = text[start:i + 1].strip()
            if piece:
                out.append(piece)
            start = i + 1
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def _prose_lines(text: str) -> Iterable[tuple[str, bool]]:
    """(the line's text, whether it is an item under a rule heading) for each prose line outside fences."""
    fenced = False
    rules = False
    for raw in (text or "").splitlines():
        line = strip_numbering(raw)
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or not line.strip():
            continue
        title = _heading_title(line)
        if title is not None:
            low = title.lower()
            rules = any(h in low for h in RULE_HEADINGS)
            continue
        if looks_like_code(line):
            continue
        item = _bullet_body(line)
        body = (item if item is not None else line.strip()).strip("*").strip()
        yield body, rules and item is not None


def _binds_zh(sentence: str) -> bool:
    for phrase in REQUIREMENT_PHRASES_ZH:
        start = sentence.find(phrase)
        while start >= 0:
            covered = any(sentence.startswith(c, start - c.index(phrase)) for c in ZH_NOT_BINDING.get(phrase, ())
                          if start - c.index(phrase) >= 0)
            if not covered:
                return True
            start = sentence.find(phrase, start + 1)
    return False


def _binds(sentence: str) -> bool:
    if _REQUIREMENT.search(sentence) or _KEEP.search(sentence) or _binds_zh(sentence):
        return True
    return any(m.group(1).lower() not in NO_NOUN_REMARKS for m in _NO_NOUN.finditer(sentence))


def _settles(sentence: str) -> bool:
    if sentence.rstrip().endswith(("?", "？")):
        return False
    return bool(_DECISION.search(sentence)) or any(p in sentence for p in DECISION_PHRASES_ZH)


def requirement_lines(text: str) -> list[str]:
    """Requirement sentences of `text`, in order, without repeats."""
    out: dict[str, None] = {}
    for line, ruled in _prose_lines(text):
        if ruled and _prose(line):
            out.setdefault(line, None)  # an item under "Constraints:" is a rule as a whole
            continue
        for s in split_sentences(line):
            if _prose(s) and _binds(s):
                out.setdefault(s, None)
    return list(out)


def decision_lines(text: str) -> list[str]:
    """Decision sentences of `text`, in order, without repeats (questions settle nothing)."""
    out: dict[str, None] = {}
    for line, _ in _prose_lines(text):
        for s in split_sentences(line):
            if _prose(s) and _settles(s):
                out.setdefault(s, None)
    return list(out)


# -- failing tests, per runner -----------------------------------------------------------------------
_PYTEST_VERBOSE = re.compile(r"^(\S+::\S+)\s+(?:FAILED|ERROR)\b")
_UNITTEST = re.compile(r"^(?:FAIL|ERROR):\s+(\w+\s+\([\w.]+\))")
_GO = re.compile(r"^---\s+FAIL:\s+(\S+)")
_EXUNIT = re.compile(r"^\d+\)\s+(test\s.+\([\w.]+\))\s*$")
_CARGO = re.compile(r"^test\s+(\S+)\s+\.\.\.\s+FAILED\s*$")
_JEST = re.compile(r"^●\s+(\S.*›.*\S)\s*$")
_RSPEC = re.compile(r"^rspec\s+(\./\S+:\d+)")


def failing_test_lines(text: str) -> list[str]:
    """The failing tests named in a tool output, in order, once each: the runner's words for the test."""
    out: dict[str, None] = {}
    for raw in (text or "").splitlines():
        line = strip_numbering(raw).strip()
        name = None
        if line.startswith(("FAILED ", "ERROR ")) and "::" in line.split(" ", 2)[1]:
            name = " ".join(line.split(" ", 2)[:2])  # pytest's summary: "FAILED path::test - reason"
        else:
            for pat in (_PYTEST_VERBOSE, _UNITTEST, _GO, _EXUNIT, _CARGO, _JEST, _RSPEC):
                m = pat.match(line)
                if m:
                    name = line[: m.end(1)] if pat in (_UNITTEST, _GO) else m.group(1)
                    break
        if name:
            out.setdefault(name.strip(), None)
    return list(out)


# -- which tool output is a spec ---------------------------------------------------------------------
def _is_spec_path(path: str) -> bool:
    name = path.rstrip("/").rsplit("/", 1)[-1].lower()
    if "." in name:
        stem, ext = name.rsplit(".", 1)
        return ext in SPEC_EXTENSIONS or (stem in SPEC_NAMES and ext in ("", "txt"))
    return name in SPEC_NAMES


def _segments(command: str) -> list[list[str]]:
    """The words of each part of a shell command line (split at | ; & && || and newlines)."""
    text = command
    for sep in ("&&", "||", "|", ";", "&", "\n", "(", ")"):
        text = text.replace(sep, "\n")
    return [[w.strip("'\"") for w in part.split()] for part in text.split("\n") if part.split()]


def is_spec_read(name: str, arguments: Any) -> bool:
    """Whether a tool call reads a spec or an issue (prose the user expects honoured), not code."""
    low = name.lower()
    if low in WEB_TOOLS:
        return True
    if not isinstance(arguments, dict) or low in WRITE_TOOLS:
        return False
    if low in ("str_replace_editor", "str_replace_based_edit_tool") and arguments.get("command") != "view":
        return False
    for key in COMMAND_KEYS:
        value = arguments.get(key)
        if not isinstance(value, str):
            continue
        for words in _segments(value):
            head = words[0].rsplit("/", 1)[-1]
            if head in ISSUE_TOOLS and any(w in ISSUE_VERBS for w in words[1:4]):
                return True
            if head in FILE_READERS and any(_is_spec_path(w) for w in words[1:] if not w.startswith("-")):
                return True
    for key in PATH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and (key == "url" or _is_spec_path(value)):
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


def line_key(text: str) -> str:
    """A line's identity for de-duplication: its letters and digits, lower-cased, single-spaced."""
    return " ".join("".join(c.lower() if c.isalnum() else " " for c in text).split())


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
            key = (line.kind, line_key(line.text))
            if key not in self._keys:
                self._keys.add(key)
                self.lines.append(line)
                new.append(line)
        return new


def pattern_lists() -> dict[str, Sequence[str]]:
    """Every word list the rule uses, by name (the independence test compares them with the product's)."""
    return {"requirement": [p for g in REQUIREMENT_PHRASES.values() for p in g], "requirement_zh": REQUIREMENT_PHRASES_ZH,
            "decision": DECISION_PHRASES, "decision_zh": DECISION_PHRASES_ZH, "rule_headings": RULE_HEADINGS,
            "issue_tools": ISSUE_TOOLS, "spec_extensions": SPEC_EXTENSIONS, "web_tools": WEB_TOOLS,
            "kept_states": KEPT_STATES}
