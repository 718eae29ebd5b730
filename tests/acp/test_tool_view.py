"""ctxagent's tool calls in ACP's terms: the unified diff of an edit as diff content, kinds, locations."""

from __future__ import annotations

from pathlib import Path

from ctxagent.agent.factory import default_registry
from ctxagent.tools.textfile import unified_diff
from ctxagent.tui.acp.prompt import file_of
from ctxagent.tui.acp.tool_view import TOOL_KINDS, diff_contents, locations, tool_kind
from hypothesis import given, settings, strategies as st

LINES = st.lists(st.sampled_from(["a", "b", "def f():", "    return 1", "中文行", "", "x = 1  # 注释", "-- x", "++ y", "--- z", "@@ -1 +1 @@", "\\ q"]), max_size=30)


def _apply(before: str, hunks: list[tuple[str | None, str]]) -> str:
    out, pos = [], 0
    for old, new in hunks:
        at = before.index(old or "", pos)
        out += [before[pos:at], new]
        pos = at + len(old or "")
    return "".join(out) + before[pos:]


@settings(max_examples=200, deadline=None)
@given(LINES, LINES, st.booleans(), st.booleans())
def test_diff_hunks_rebuild_the_edit(tmp_path_factory, a: list[str], b: list[str], end_a: bool, end_b: bool) -> None:
    root = tmp_path_factory.mktemp("r")
    before = "\n".join(a) + ("\n" if end_a and a else "")
    after = "\n".join(b) + ("\n" if end_b and b else "")
    diff, _ = unified_diff("f.py", before, after, False)
    hunks = diff_contents(root, diff)
    if before == after:
        assert hunks == []
        return
    assert hunks and all(h.path == str(root / "f.py") and h.old_text is not None for h in hunks)
    assert _apply(before, [(h.old_text, h.new_text) for h in hunks]) == after


def test_a_created_file_has_no_old_text_and_a_path_outside_gets_no_location(tmp_path: Path) -> None:
    diff, _ = unified_diff("new.txt", "", "hello\n世界\n", True)
    (hunk,) = diff_contents(tmp_path, diff)
    assert hunk.old_text is None and hunk.new_text == "hello\n世界\n"
    outside = diff.replace("b/new.txt", "b/../../etc/passwd")
    assert diff_contents(tmp_path, outside) == []
    assert locations(tmp_path, {"path": "../../etc/passwd"}) == []
    assert locations(tmp_path, {"path": "/etc/passwd"}) == []
    assert file_of(tmp_path, "file:///etc/passwd") is None


def test_every_registered_tool_has_a_kind() -> None:
    registry = default_registry()
    for name in registry.names():
        assert name in TOOL_KINDS, name
    assert tool_kind("some_mcp_tool") == "other" and tool_kind("x", "command") == "execute"


def test_a_removed_line_that_looks_like_a_header_stays_in_its_hunk(tmp_path: Path) -> None:
    before, after = "-- a comment\n++ b\nkeep\n", "keep\n"
    diff, _ = unified_diff("x.sql", before, after, False)
    assert "\n--- a comment\n" in diff and "\n-++ b\n" in diff
    (hunk,) = diff_contents(tmp_path, diff)
    assert hunk.path == str(tmp_path / "x.sql") and hunk.old_text == before and hunk.new_text == after
