"""Regular expressions and globs from a model or a repository, matched within a time budget.

Python's `re` backtracks: `(?=a)(a+)+$` on a line of a's, or the glob `*a*a*a*a*a*b` on a long
file name, runs for minutes to ages, holding the GIL, and nothing can interrupt it. Every pattern a
tool matches itself (grep's Python search, read_spill's grep, the glob of list_files and grep) goes
through `BoundedPattern`: compiled with the `regex` module (the syntax of `re`, a superset), whose
matcher takes a timeout and releases the GIL. One budget covers a whole tool call; past it the call
fails with a `PatternTimeoutError` that tells the model what to change. ripgrep needs none of this:
its engine is linear-time.

`regex` expands fixed repeat counts when it compiles (`(?:x{65535}){65535}` would need terabytes),
so a pattern whose repeats multiply past MAX_EXPANDED is refused before compiling.
"""

from __future__ import annotations

import time

import regex
from ctxagent.context.errors import PatternTimeoutError, ToolError

MATCH_SECONDS = 5.0  # matching time one tool call may spend on one pattern
MAX_EXPANDED = 200_000  # pattern nodes after fixed repeats are unrolled (≈ 270 bytes each when compiled)

HINT = ("it backtracks catastrophically (nested or adjacent repeats such as (a+)+, (a|aa)+ or .*a.*a.*b); "
        "use a simpler or more specific pattern")


class BoundedPattern:
    """A compiled pattern whose `search` calls share one deadline."""

    def __init__(self, pattern: str, *, ignore_case: bool = False, seconds: float = MATCH_SECONDS,
                 what: str = "regular expression", shown: str | None = None):
        self.source = pattern if shown is None else shown  # what the messages quote (a glob, not its regex)
        self.what = what
        self.seconds = seconds
        size = expanded_size(pattern)
        if size > MAX_EXPANDED:
            raise ToolError(f"refusing the {what} {_quote(self.source)}: its repeat counts unroll to about {size:,} "
                            f"steps (at most {MAX_EXPANDED:,}); use smaller counts, or + and * instead of large {{n}}")
        try:
            self.compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
        except (regex.error, OverflowError, RecursionError) as exc:
            msg = getattr(exc, "msg", None) or str(exc)
            pos = getattr(exc, "pos", None)
            where = f" at position {pos}" if pos is not None else ""
            raise ToolError(f"invalid {what} {_quote(self.source)}: {msg}{where}. "
                            "Escape special characters such as ( ) [ ] { } . * + ? | \\ to match them literally") from None
        self._deadline: float | None = None  # set by the first match: compiling early to validate costs nothing

    def _left(self) -> float:
        if self._deadline is None:
            self._deadline = time.monotonic() + self.seconds
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise self._timeout()
        return left

    def search(self, text: str) -> bool:
        try:
            return self.compiled.search(text, timeout=self._left(), concurrent=True) is not None
        except TimeoutError:
            raise self._timeout() from None

    def match(self, text: str) -> bool:
        """Anchored at the start (the glob matcher's use)."""
        try:
            return self.compiled.match(text, timeout=self._left(), concurrent=True) is not None
        except TimeoutError:
            raise self._timeout() from None

    def _timeout(self) -> PatternTimeoutError:
        return PatternTimeoutError(f"the {self.what} {_quote(self.source)} took longer than {self.seconds:g} s to match "
                                   f"and was stopped: {HINT}")


def expanded_size(pattern: str) -> int:
    """An upper bound of the pattern's size once `regex` has unrolled its fixed repeats ({m}, {m,n}):
    atoms count 1, a group the sum of its parts, a repeat multiplies what it repeats by m."""
    stack: list[list[int]] = [[0, 0]]  # per open group: [size so far, size of the last atom]
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            if pattern[i - 1:i] in ("x", "N", "p", "P", "g", "L") and pattern[i:i + 1] in ("{", "<"):
                close = pattern.find("}" if pattern[i] == "{" else ">", i)
                i = n if close == -1 else close + 1
            _atom(stack, 1)
        elif c == "[":
            i = _class_end(pattern, i)
            _atom(stack, 1)
        elif c == "(":
            if pattern.startswith("(?#", i):
                close = pattern.find(")", i)
                i = n if close == -1 else close + 1
                continue
            stack.append([0, 0])
            i += 1
        elif c == ")" and len(stack) > 1:
            size = stack.pop()[0]
            _atom(stack, max(size, 1))
            i += 1
        elif c == "{" and (m := _REPEAT.match(pattern, i)):
            top = stack[-1]
            times = max(int(m.group(1)), 1)
            top[0] += top[1] * (times - 1)
            top[1] *= times
            i = m.end()
        else:
            _atom(stack, 1)
            i += 1
        if stack[-1][0] > MAX_EXPANDED * 1000:  # far past any limit: stop counting
            break
    while len(stack) > 1:  # unclosed groups (the compiler will say so)
        size = stack.pop()[0]
        _atom(stack, size)
    return stack[0][0]


_REPEAT = regex.compile(r"\{\s*(\d+)\s*(?:,\s*\d*\s*)?\}")


def _atom(stack: list[list[int]], size: int) -> None:
    stack[-1][0] += size
    stack[-1][1] = size


def _class_end(pattern: str, i: int) -> int:
    """The index after the character class that opens at `i`."""
    j = i + 1
    if pattern[j:j + 1] == "^":
        j += 1
    if pattern[j:j + 1] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def _quote(text: str, limit: int = 200) -> str:
    return repr(text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)")
