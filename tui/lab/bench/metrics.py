"""Benchmark measures: percentiles, the affine token fit, prefix reuse and fact retention.

Definitions (issue 7):
- *prefix reuse* of a request = the share of its tokens in the leading chunks (system, tool
  schemas, messages, in order) that are identical to the previous request's leading chunks — what
  a prompt cache could serve. A request is compared chunk by chunk, so a changed message ends the
  reused prefix even if later messages are unchanged.
- a *fact* at call t = a file path (reduced to its file name, so `./src/a.py`, `/repo/src/a.py` and
  `a.py` are one fact) that a tool call made by call t references and that an earlier event already
  referenced. It is *retained* if the context built for call t contains it anywhere (verbatim
  history, a summary or the warm block).
- the *fit* `reported = a + b · local` by least squares, with its median relative error.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# A path-like token: at least one "/" between name characters, or a name with a file extension.
_PATH = re.compile(r"(?<![\w@:])(?:~|\.{1,2})?/?(?:[\w.\-]+/)*[\w\-]+(?:\.[A-Za-z][A-Za-z0-9]{0,7})+(?![\w/])"
                   r"|(?<![\w@:])(?:~|\.{1,2})?/?(?:[\w.\-]+/)+[\w.\-]+")
# A name without a directory counts as a file only with a known extension: `msg.content`,
# `Enum.map` or `v1.2` are code, not files.
FILE_EXTENSIONS = frozenset("""
py pyi pyx pxd ipynb js mjs cjs ts tsx jsx vue svelte ex exs heex eex leex erl hrl go rs c h cc cpp cxx hpp hh
java kt kts scala rb php pl sh bash zsh fish ps1 lua swift m mm cs fs r jl dart zig nim pony hs ml mli clj elm
md rst txt adoc json jsonl yaml yml toml cfg ini conf env lock xml html htm css scss sass less sql csv tsv
proto graphql tf mk cmake gradle patch diff log traj gz zip tar png jpg jpeg gif svg pdf mpeg m4v avi mp4 wasm
""".split())
# Tool arguments that carry code or prose rather than references to files.
CODE_ARGUMENTS = frozenset({"old_str", "new_str", "old_string", "new_string", "content", "file_text", "text",
                            "code", "insert_text", "new_text", "edits", "description", "thought"})
_MIN_FACT_LEN = 3


def percentile(values: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile (p in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    xs = sorted(values)
    if len(xs) == 1:
        return float(xs[0])
    k = (len(xs) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return float(xs[lo] + (xs[hi] - xs[lo]) * (k - lo))


def mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else 0.0


# -- the affine fit ------------------------------------------------------------------------------
@dataclass
class Fit:
    a: float
    b: float
    median_rel_err: float
    n: int

    def to_local(self, reported: float) -> float:
        """Reported tokens expressed in local-counter units."""
        return (reported - self.a) / self.b if self.b else reported

    def predict(self, local: float) -> float:
        return self.a + self.b * local

    def to_dict(self) -> dict[str, Any]:
        return {"a": round(self.a, 2), "b": round(self.b, 5), "median_rel_err": round(self.median_rel_err, 5)}


def fit_affine(local: Sequence[float], reported: Sequence[float]) -> Fit | None:
    """Least-squares `reported = a + b · local`; None with fewer than 2 points or no spread."""
    pts = [(float(x), float(y)) for x, y in zip(local, reported, strict=True) if y]
    if len(pts) < 2:
        return None
    mx = mean([x for x, _ in pts])
    my = mean([y for _, y in pts])
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in pts) / sxx
    a = my - b * mx
    errs = [abs(a + b * x - y) / y for x, y in pts]
    return Fit(a, b, statistics.median(errs), len(pts))


def rel_errors(estimates: Sequence[float], reported: Sequence[float]) -> list[float]:
    return [abs(e - r) / r for e, r in zip(estimates, reported, strict=True) if r]


# -- prefix reuse --------------------------------------------------------------------------------
def common_prefix_tokens(prev: Sequence[tuple[str, int]], cur: Sequence[tuple[str, int]]) -> int:
    """Tokens of `cur`'s leading chunks equal to `prev`'s (chunks are (key, tokens))."""
    shared = 0
    for (pk, _), (ck, ct) in zip(prev, cur, strict=False):
        if pk != ck:
            break
        shared += ct
    return shared


def prefix_reuse(prev: Sequence[tuple[str, int]] | None, cur: Sequence[tuple[str, int]]) -> float | None:
    """Share of `cur`'s tokens a prompt cache holding `prev` could serve (None for the first call)."""
    if prev is None:
        return None
    total = sum(t for _, t in cur)
    return common_prefix_tokens(prev, cur) / total if total else 0.0


# -- facts and retention -------------------------------------------------------------------------
def _fact_key(token: str) -> str | None:
    tok = token.strip().rstrip(".,:;)'\"`")
    if not tok or "://" in tok:
        return None
    name = tok.rstrip("/").rsplit("/", 1)[-1]
    base = name.lstrip(".")
    ext = base.rsplit(".", 1)[-1].lower() if "." in base else ""
    if ext and ext not in FILE_EXTENSIONS:
        return None
    if not ext and "/" not in tok.strip("/"):
        return None  # a bare word is no path
    key = name if name else tok
    if len(key) < _MIN_FACT_LEN or key in (".", ".."):
        return None
    return key


def paths_in(text: str) -> set[str]:
    """File names (the fact keys) of the path-like tokens in `text`."""
    out: set[str] = set()
    for m in _PATH.finditer(text or ""):
        key = _fact_key(m.group(0))
        if key:
            out.add(key)
    return out


def _reference_strings(value: Any) -> Iterable[str]:
    """The strings of a tool call's arguments that may name files (code and prose arguments skipped)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if str(k) not in CODE_ARGUMENTS:
                yield from _reference_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _reference_strings(v)


def tool_call_paths(tool_calls: Iterable[dict[str, Any]]) -> set[str]:
    out: set[str] = set()
    for call in tool_calls or []:
        for text in _reference_strings(call.get("arguments")):
            out |= paths_in(text)
    return out


def event_text(kind: str, data: dict[str, Any]) -> str:
    """Everything of an event a model could read, as one string (used to find earlier references)."""
    if kind == "assistant":
        calls = " ".join(json.dumps(c.get("arguments"), ensure_ascii=False) for c in data.get("tool_calls") or [])
        return f"{data.get('text', '')}\n{calls}"
    if kind == "tool_result":
        return str(data.get("content", ""))
    if kind in ("user",):
        return str(data.get("text", ""))
    if kind in ("compaction", "source_compaction"):
        return str(data.get("summary", ""))
    return ""


class FactTracker:
    """Knows which fact keys earlier events referenced, to decide which paths of a call are facts."""

    def __init__(self) -> None:
        self._seen_text: list[str] = []
        self._seen_keys: dict[str, None] = {}  # in order of first mention

    def add(self, kind: str, data: dict[str, Any]) -> None:
        text = event_text(kind, data)
        self._seen_text.append(text)
        for key in sorted(paths_in(text)):
            self._seen_keys.setdefault(key, None)

    def names(self) -> list[str]:
        """Every file name mentioned so far, in order of first mention (the last2+names baseline's list)."""
        return list(self._seen_keys)

    def last_reference(self, key: str) -> int | None:
        """Index (in add order) of the latest event that mentions `key`, or None."""
        for i in range(len(self._seen_text) - 1, -1, -1):
            if key in self._seen_text[i]:
                return i
        return None

    def facts(self, tool_calls: Iterable[dict[str, Any]]) -> list[str]:
        """The paths of these tool calls that an earlier event already referenced."""
        found = []
        for key in sorted(tool_call_paths(tool_calls)):
            if key in self._seen_keys or any(key in t for t in self._seen_text):
                found.append(key)
        return found


def retained(facts: Iterable[str], context_text: str) -> int:
    return sum(1 for f in facts if f in context_text)
