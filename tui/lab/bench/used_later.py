"""Used-later retention: did the request for call t hold what the real agent used at call t?

At call t the real agent produced an output (its text and its tool calls' arguments). The
*distinctive strings* of that output which had already appeared earlier in the history are what it
took from its context at that step; so the context it needed held them. For each strategy we ask
whether its request for call t contains each of them. `full` is the upper bound (minus what the
source's own compaction or a window removed), and a baseline that keeps little fails it. No detector
of the product defines the measure: the rules below are the bench's own (nothing here is imported
from the product's memory or tool-meta code).

**Distinctive strings** (`used_strings`), read from the output's text and from every string of its
tool calls' arguments:
- *identifier*: a name with an underscore in it (`parse_header`, `_cstack`, `MAX_SIZE`), or with a
  case change inside it (`parseHeader`, `HeaderParser`), of ≥ 4 characters; or a dotted name of
  such parts or plain words (`os.path.join`, `self.header`, a file name `separable.py`), ≥ 5
  characters. Dunder names (`__init__`), plain words and words in capitals do not count.
- *path:line*: a file name or path with a line number (`io/fits/header.py:123`).
- *number*: a number of ≥ 4 digits (`12907`, `0x` forms excluded).
- *error*: an exception or error head with its message (`ValueError: invalid literal for int()`,
  `error: pathspec 'x' did not match`), cut at 60 characters.
- *quoted*: a phrase inside "…", '…' or `…` (3 to 120 characters, with a letter in it).

**Appeared earlier**: the string occurs in an event before call t (a user message, an earlier output
or a tool result of the source's raw history). Identifiers, numbers and path:line strings are
compared as whole tokens (`atoms`: `parse` does not match inside `parse_header`; a dotted name matches
any run of its parts, a path any suffix); errors and quoted phrases verbatim.

**Kept**: the same test on the request (every message and the system prompt). Reported pooled
(strings kept / strings) and as the mean over calls of the share kept, before and after the
source's own compaction. For ctxagent a string it lacks is *behind a handle* when an earlier event
holding it is named by the request — a cleared or pruned result's `read_event id=N`, a spilled
one's `read_spill handle=H`, a summary's "events F–L" range or a file list's "(event N)" — and
*gone* otherwise: the model could ask for the first kind, at the price of a call.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

KINDS = ("identifier", "path:line", "number", "error", "quoted")
ATOM_KINDS = frozenset({"identifier", "path:line", "number"})
ERROR_CHARS = 60

_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_PATH_LINE = re.compile(r"(?<![\w./-])((?:[\w.-]*/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7}):(\d+)(?![\d])")
_NUMBER = re.compile(r"(?<![\w.])\d{4,}(?![\w]|\.\d)")
_ERROR = re.compile(r"(?<![\w.])((?:[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Failure))|error|fatal|Error|ERROR|FATAL)"
                    r":[ \t]+(\S[^\n]{3,})")
_QUOTED = re.compile(r"\"([^\"\n]{3,120})\"|'([^'\n]{3,120})'|`([^`\n]{3,120})`")
# the product's handles, as its requests print them (context/prune.py, context/build/render.py, context/ledger.py)
_READ_EVENT = re.compile(r"read_event id=(\d+)")
_EVENT_REF = re.compile(r"\(event (\d+)\)")
_EVENT_RANGE = re.compile(r"events (\d+)[–-](\d+)")
_READ_SPILL = re.compile(r"read_spill handle=([A-Za-z0-9_.-]+)")


def _distinctive_part(word: str) -> bool:
    core = word.strip("_")
    if len(word) < 4 or not core or (word.startswith("__") and word.endswith("__")):
        return False
    if "_" in word and any(c.isalpha() for c in core):
        return True
    return any(a.islower() and b.isupper() for a, b in zip(core, core[1:], strict=False)) or (
        core[0].isupper() and any(c.islower() for c in core) and sum(1 for c in core if c.isupper()) >= 2)


def _identifiers(run: str) -> Iterator[str]:
    """The distinctive names in one maximal dotted run: the run itself and every run of its parts that is
    distinctive (a single part that is a distinctive name, or ≥ 2 parts of ≥ 5 characters)."""
    parts = run.split(".")
    for i in range(len(parts)):
        for j in range(i + 1, len(parts) + 1):
            if j - i == 1:
                if _distinctive_part(parts[i]):
                    yield parts[i]
            else:
                piece = ".".join(parts[i:j])
                if len(piece) >= 5 and all(parts[i:j]):
                    yield piece


def _path_lines(text: str) -> Iterator[str]:
    for m in _PATH_LINE.finditer(text):
        path, line = m.group(1), m.group(2)
        pieces = path.split("/")
        for k in range(len(pieces)):
            tail = "/".join(pieces[k:])
            if tail and "." in tail:
                yield f"{tail}:{line}"


def _may_hold_names(run: str) -> bool:
    """A cheap first test: a plain word (all lower case, or capitalized) holds no distinctive name."""
    return "_" in run or "." in run or not (run.islower() or run.isupper() or run[1:].islower())


def atoms(text: str) -> set[str]:
    """Every token of `text` a used string of kind identifier, path:line or number can match."""
    out: set[str] = set()
    for run in _DOTTED.findall(text):
        if _may_hold_names(run):
            out.update(_identifiers(run))
    out.update(_path_lines(text))
    out.update(m.group(0) for m in _NUMBER.finditer(text))
    return out


def _clip(text: str, limit: int = ERROR_CHARS) -> str:
    text = text.rstrip()
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip()


def used_strings(texts: Iterable[str]) -> list[tuple[str, str]]:
    """(kind, string) of the distinctive strings in an output's texts, once each, in order of kind."""
    found: dict[tuple[str, str], None] = {}
    texts = [t for t in texts if t]
    for text in texts:
        for run in _DOTTED.findall(text):
            if not _may_hold_names(run):
                continue
            whole = run if "." in run and len(run) >= 5 else None
            for piece in _identifiers(run):
                if "." not in piece or piece == whole:
                    found.setdefault(("identifier", piece), None)
        for m in _PATH_LINE.finditer(text):  # as written (the history's atoms hold every suffix of a path)
            found.setdefault(("path:line", f"{m.group(1)}:{m.group(2)}"), None)
        for m in _NUMBER.finditer(text):
            found.setdefault(("number", m.group(0)), None)
        for m in _ERROR.finditer(text):
            found.setdefault(("error", _clip(f"{m.group(1)}: {m.group(2)}")), None)
        for m in _QUOTED.finditer(text):
            inner = next(g for g in m.groups() if g is not None).strip()
            if len(inner) >= 3 and any(c.isalpha() for c in inner):
                found.setdefault(("quoted", inner), None)
    return sorted(found, key=lambda ks: KINDS.index(ks[0]))


def history_text(kind: str, data: dict[str, Any]) -> str:
    """What a source event put in the history, as `raw_text` reads a message (user, assistant, tool result)."""
    if kind == "user":
        return str(data.get("text") or "")
    if kind == "assistant":
        return "\n".join(output_texts(data))
    if kind == "tool_result":
        return str(data.get("content") or "")
    return ""


def output_texts(data: dict[str, Any]) -> list[str]:
    """What an assistant event produced: its text and every string of its tool calls' arguments."""
    out = [str(data.get("text") or "")]
    for call in data.get("tool_calls") or []:
        out.extend(_strings(call.get("arguments")))
    return out


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


# -- where strings appeared in the history -------------------------------------------------------
class HistoryIndex:
    """The source's raw history so far: which atoms each event holds, and its texts for phrases."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.positions: list[int] = []  # the source position of each indexed event
        self._atoms: dict[str, list[int]] = {}  # atom → indexes into texts
        self._joined = ""
        self._starts: list[int] = []
        self._joined_n = 0
        self._phrases: dict[str, tuple[int, int | None]] = {}  # phrase → (texts searched, first index found)

    def add(self, position: int, text: str) -> None:
        i = len(self.texts)
        self.texts.append(text)
        self.positions.append(position)
        for a in atoms(text):
            self._atoms.setdefault(a, []).append(i)

    def _join(self) -> None:
        if self._joined_n == len(self.texts):
            return
        parts = self.texts[self._joined_n:]
        for t in parts:
            self._starts.append(len(self._joined))
            self._joined += t + "\x00"
        self._joined_n = len(self.texts)

    def seen(self, kind: str, s: str) -> bool:
        """Whether `s` appeared in the history indexed so far."""
        if kind in ATOM_KINDS:
            return s in self._atoms
        searched, found = self._phrases.get(s, (0, None))
        if found is not None:
            return True
        if searched < len(self.texts):
            self._join()
            at = self._joined.find(s, self._starts[searched] if searched < len(self._starts) else len(self._joined))
            found = bisect_right(self._starts, at) - 1 if at >= 0 else None
            self._phrases[s] = (len(self.texts), found)
        return found is not None

    def holders(self, kind: str, s: str) -> list[int]:
        """The source positions of the events holding `s`."""
        if kind in ATOM_KINDS:
            return [self.positions[i] for i in self._atoms.get(s, [])]
        return [self.positions[i] for i, t in enumerate(self.texts) if s in t]


# -- what a request holds ------------------------------------------------------------------------
def raw_text(item: Any) -> str:
    """What a message says, as the model reads it: its content and its tool calls' argument strings as they are
    (not JSON-escaped, so a name at the start of a line of a Write's content stays a name). A text is itself."""
    if isinstance(item, str):
        return item
    calls = getattr(item, "tool_calls", None) or []
    if not calls:
        return str(getattr(item, "content", ""))
    return "\n".join([str(item.content), *(x for c in calls for x in _strings(c.arguments))])


class MessageFacts:
    """Per message (by key, shared by every strategy of a trajectory): its text, its atoms and the handles it names."""

    def __init__(self) -> None:
        self._texts: dict[Any, str] = {}
        self._atoms: dict[Any, frozenset[str]] = {}
        self._handles: dict[Any, tuple[frozenset[int], tuple[tuple[int, int], ...], frozenset[str]]] = {}

    def text(self, key: Any, item: Any) -> str:
        got = self._texts.get(key)
        if got is None:
            got = self._texts[key] = raw_text(item)
        return got

    def atoms(self, key: Any, item: Any) -> frozenset[str]:
        got = self._atoms.get(key)
        if got is None:
            got = self._atoms[key] = frozenset(atoms(self.text(key, item)))
        return got

    def known_atoms(self, key: Any) -> frozenset[str]:
        return self._atoms.get(key, frozenset())

    def handles(self, key: Any, item: Any) -> tuple[frozenset[int], tuple[tuple[int, int], ...], frozenset[str]]:
        got = self._handles.get(key)
        if got is None:
            text = self.text(key, item)
            ids = {int(x) for x in _READ_EVENT.findall(text)} | {int(x) for x in _EVENT_REF.findall(text)}
            ranges = tuple((int(a), int(b)) for a, b in _EVENT_RANGE.findall(text))
            got = self._handles[key] = (frozenset(ids), ranges, frozenset(_READ_SPILL.findall(text)))
        return got


@dataclass
class RequestAtoms:
    """One lane's current request as a multiset of message keys, and the atoms those messages hold
    (updated by what changed since its previous request)."""

    keys: Counter[Any] = field(default_factory=Counter)
    counts: Counter[str] = field(default_factory=Counter)

    def update(self, keys: Sequence[Any], items: Sequence[Any], facts: MessageFacts) -> None:
        """The lane's new request: its messages' `keys` and the messages (`items`, in the same order)."""
        new = Counter(keys)
        if new == self.keys:
            return
        added = new - self.keys
        if added:
            where = {k: i for i, k in enumerate(keys) if k in added}
            for k, n in added.items():
                for a in facts.atoms(k, items[where[k]]):
                    self.counts[a] += n
        for k, n in (self.keys - new).items():
            for a in facts.known_atoms(k):
                self.counts[a] -= n
                if self.counts[a] <= 0:
                    del self.counts[a]
        self.keys = new


# -- the accumulator -------------------------------------------------------------------------------
@dataclass
class UsedLater:
    """Per strategy: strings used at each call and how many its request held."""

    strings: int = 0
    kept: int = 0
    per_call: list[float] = field(default_factory=list)
    after_strings: int = 0  # of those, at calls after the source's own compaction
    after_kept: int = 0
    after_per_call: list[float] = field(default_factory=list)
    by_kind: dict[str, list[int]] = field(default_factory=dict)  # kind → [strings, kept]
    behind_handle: int = 0  # missing, but an earlier event holding it is named by the request (ctxagent)
    gone: int = 0  # missing, and nothing in the request points at it
    failed: int = 0  # missing because the build failed (an overflow): nothing was sent

    def add(self, used: Sequence[tuple[str, str]], kept: Sequence[bool], after: bool) -> None:
        if not used:
            return
        n, k = len(used), sum(1 for x in kept if x)
        self.strings += n
        self.kept += k
        self.per_call.append(k / n)
        if after:
            self.after_strings += n
            self.after_kept += k
            self.after_per_call.append(k / n)
        for (kind, _), ok in zip(used, kept, strict=True):
            row = self.by_kind.setdefault(kind, [0, 0])
            row[0] += 1
            row[1] += 1 if ok else 0

    def merge(self, other: UsedLater) -> None:
        self.strings += other.strings
        self.kept += other.kept
        self.per_call += other.per_call
        self.after_strings += other.after_strings
        self.after_kept += other.after_kept
        self.after_per_call += other.after_per_call
        for kind, (n, k) in other.by_kind.items():
            row = self.by_kind.setdefault(kind, [0, 0])
            row[0] += n
            row[1] += k
        self.behind_handle += other.behind_handle
        self.gone += other.gone
        self.failed += other.failed

    def to_dict(self) -> dict[str, Any]:
        def share(k: int, n: int) -> float | None:
            return round(k / n, 4) if n else None

        def mean(xs: list[float]) -> float | None:
            return round(sum(xs) / len(xs), 4) if xs else None

        before_n, before_k = self.strings - self.after_strings, self.kept - self.after_kept
        before_calls = len(self.per_call) - len(self.after_per_call)
        missing = self.strings - self.kept
        return {
            "strings": self.strings,
            "pooled": share(self.kept, self.strings),
            "mean_over_calls": mean(self.per_call),
            "calls": len(self.per_call),
            "before_source_compaction": {"strings": before_n, "pooled": share(before_k, before_n),
                                         "calls": before_calls},
            "after_source_compaction": {"strings": self.after_strings, "pooled": share(self.after_kept, self.after_strings),
                                        "mean_over_calls": mean(self.after_per_call), "calls": len(self.after_per_call)},
            "by_kind": {kind: {"strings": n, "pooled": share(k, n)} for kind, (n, k) in sorted(self.by_kind.items())},
            "missing": {"strings": missing, "behind_handle": self.behind_handle, "gone": self.gone,
                        "build_failed": self.failed},
        }


def handle_named(holders: Iterable[int], lane_ids: dict[int, int], spills: dict[int, str],
                 named: tuple[set[int], list[tuple[int, int]], set[str]]) -> bool:
    """Whether an event holding a string (source positions → the lane's event ids) is named by a handle
    of the request: its id (read_event, "(event N)"), a summary range holding it, or its spill handle."""
    ids, ranges, handles = named
    for pos in holders:
        eid = lane_ids.get(pos)
        if eid is None:
            continue
        if eid in ids or any(a <= eid <= b for a, b in ranges):
            return True
        h = spills.get(eid)
        if h is not None and any(h.startswith(x) or x.startswith(h) for x in handles):
            return True
    return False
