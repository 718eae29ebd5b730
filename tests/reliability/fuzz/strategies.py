"""Hypothesis strategies shared by the fuzz tests (issue 19 "A suite that keeps finding things").

Text includes what breaks naive code: lone surrogates, NUL and control characters, bidi overrides,
Chinese, very long runs. JSON values nest, and some nest far past any parser's stack.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

# Every code point, lone surrogates included (category Cs), plus a few hand-picked troublemakers.
HOSTILE_CHARS = st.characters(codec=None, exclude_categories=())
TEXT = st.one_of(
    st.text(HOSTILE_CHARS, max_size=40),
    st.sampled_from(["", ".", "..", "/", "~", "../../etc/passwd", "\x00", "a\x00b", "\u202eevil", "中文 路径",
                     "\udce9", "\ud800", "x" * 5000, "\\", "*", "**/*", "[", "(?:a+)+$", "-rf", "$(id)"]),
)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True), TEXT)
JSON: st.SearchStrategy[Any] = st.recursive(
    SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12)


def deep(depth: int, kind: str = "list") -> Any:
    """A value nested `depth` levels (built without recursion)."""
    value: Any = 0
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


def deep_text(depth: int) -> str:
    return "[" * depth + "]" * depth


DEPTHS = st.sampled_from([1, 63, 64, 65, 200, 1_100, 50_000])
