"""Is a line still in the request? Exact, or a fuzzy token-set match, per message, memoized.

A line (a requirement or a decision, see requirements.py) is **present** in a request when some
message of it (its text, or a tool call's arguments) contains the line verbatim, or when some window
of `WINDOW_LINES` consecutive lines of one message holds at least `FUZZY` (0.8) of the line's
distinct terms. Terms are the bench's own (`terms_of`, nothing shared with the product's memory
index): words of two or more letters or digits, lower-cased, identifiers split at case changes and
digits, a plural or -ed/-ing ending dropped; a run of Chinese characters gives its bigrams. So
Chinese and English both match. A rewrapped bullet, a clipped summary item or a Read tool's
line-number prefix still count; a paraphrase does not.

Stub name lists ("files named in the cut part: …", which pruned previews append) are removed before
matching, and so is the `last2+names` baseline's list of names: a list of names keeps no requirement.

Messages repeat from one request to the next, so the verdicts are remembered per message and a call
only checks the messages and lines it has not seen.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxagent.context.prune import FILES_NOTE
from ctxagent.context.request import Message
from ctxagent.tui.lab.bench.request_meter import RequestMeter
from ctxagent.tui.lab.bench.requirements import Line

FUZZY = 0.8
WINDOW_LINES = 3
# the cuts' pointer lists (context/prune.py FILES_NOTE); up to the note's closing bracket
STUB_LISTS = re.compile(re.escape(FILES_NOTE) + r":[^\]\n]*")
NAMES_KIND = "names"  # Message.kind of the last2+names baseline's list of file names


def strip_stub_lists(text: str) -> str:
    return STUB_LISTS.sub("", text) if FILES_NOTE in text else text


_RUN = re.compile(r"[A-Za-z0-9]+|[\u4e00-\u9fff]+")
_PIECE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_ENDINGS = ("ing", "ed", "es", "s")


def _ending_off(word: str) -> str:
    for end in _ENDINGS:
        if word.endswith(end) and len(word) - len(end) >= 3:
            return word[: -len(end)]
    return word


def terms_of(text: str) -> list[str]:
    """The bench's terms of a text (see the module's docstring), in order, with repeats."""
    out: list[str] = []
    for run in _RUN.findall(text or ""):
        if "\u4e00" <= run[0] <= "\u9fff":
            out += [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]
            continue
        pieces = _PIECE.findall(run) or [run]
        out += [_ending_off(p.lower()) for p in pieces if len(p) >= 2]
    return out


def term_set(text: str) -> frozenset[str]:
    return frozenset(terms_of(text))


def message_text(m: Message) -> str:
    """What of a message a model reads as history: its content and its tool calls' arguments."""
    if not m.tool_calls:
        return m.content
    return "\n".join([m.content, *(json.dumps(c.arguments, ensure_ascii=False) for c in m.tool_calls)])


@dataclass
class MessageText:
    """One message's matchable text (stub lists removed) and, lazily, its terms per line window."""

    text: str
    _lower: str | None = None
    _terms: frozenset[str] | None = None
    _windows: list[frozenset[str]] | None = None

    @property
    def lower(self) -> str:
        if self._lower is None:
            self._lower = self.text.lower()
        return self._lower

    @property
    def terms(self) -> frozenset[str]:
        if self._terms is None:
            self._terms = term_set(self.text)
        return self._terms

    @property
    def windows(self) -> list[frozenset[str]]:
        if self._windows is None:
            per_line = [term_set(ln) for ln in self.text.splitlines() if ln.strip()]
            n = len(per_line)
            self._windows = [frozenset().union(*per_line[i:i + WINDOW_LINES]) for i in range(max(1, n - WINDOW_LINES + 1))] if n else []
        return self._windows


def line_present(text: str, line_terms: frozenset[str], msg: MessageText) -> bool:
    """`text` (a requirement or decision line) is in `msg`: verbatim, or ≥ FUZZY of its terms in one window."""
    if text in msg.text:
        return True
    if not line_terms:
        return False
    need = math.ceil(FUZZY * len(line_terms))
    # the message as a whole must hold enough of the terms (a set intersection: most messages stop here)
    if len(line_terms & msg.terms) < need:
        return False
    return any(len(line_terms & w) >= need for w in msg.windows)


@dataclass
class _Entry:
    text: MessageText
    checked: int = 0  # lines [0, checked) were checked against this message
    present: set[int] = field(default_factory=set)


class PresenceIndex:
    """Per trajectory: which of the lines stated so far each message carries (memoized by message)."""

    def __init__(self) -> None:
        self._memo: dict[tuple[Any, ...], _Entry] = {}
        self._line_terms: list[frozenset[str]] = []
        self._texts: dict[Any, str] = {}

    def text(self, key: Any, m: Message) -> str:
        """`message_text(m)`, once per message key."""
        got = self._texts.get(key)
        if got is None:
            got = self._texts[key] = message_text(m)
        return got

    def request_texts(self, messages: Sequence[Message], keys: Sequence[Any]) -> tuple[str, str]:
        """`request_texts`, with the message texts remembered."""
        shown = [self.text(k, m) for k, m in zip(keys, messages, strict=True)]
        bare = [strip_stub_lists(t) if FILES_NOTE in t else t for m, t in zip(messages, shown, strict=True)
                if m.kind != NAMES_KIND]
        return "\n".join(shown), "\n".join(bare)

    def _terms_of(self, lines: Sequence[Line]) -> list[frozenset[str]]:
        for line in lines[len(self._line_terms):]:
            self._line_terms.append(term_set(line.text))
        return self._line_terms

    def present(self, messages: Sequence[Message], lines: Sequence[Line], keys: Sequence[Any] | None = None) -> set[int]:
        """Indexes (into `lines`, which only grows) of the lines some message of the request carries. `keys`:
        the messages' keys (RequestMeter), when the caller has them."""
        line_terms = self._terms_of(lines)
        found: set[int] = set()
        for pos, m in enumerate(messages):
            if m.kind == NAMES_KIND:
                continue
            key = keys[pos] if keys is not None else RequestMeter.message_key(m)
            entry = self._memo.get(key)
            if entry is None:
                entry = self._memo[key] = _Entry(MessageText(strip_stub_lists(self.text(key, m))))
            for i in range(entry.checked, len(lines)):
                if line_present(lines[i].text, line_terms[i], entry.text):
                    entry.present.add(i)
            entry.checked = len(lines)
            found |= entry.present
        return found


def request_texts(messages: Sequence[Message]) -> tuple[str, str]:
    """(everything shown, the same without stub name lists and the names baseline's list): the texts
    file-name retention is checked in."""
    shown = [message_text(m) for m in messages]
    bare = [strip_stub_lists(t) for m, t in zip(messages, shown, strict=True) if m.kind != NAMES_KIND]
    return "\n".join(shown), "\n".join(bare)
