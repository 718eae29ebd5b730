"""Presence of a line in a request: exact, fuzzy token-set ≥ 0.8 (English and Chinese), stub lists excluded."""

from __future__ import annotations

from ctxagent.context.prune import pruned_text
from ctxagent.context.request import Message, ToolCall
from ctxagent.context.tokens import get_counter
from ctxagent.tui.lab.bench.presence import (
    NAMES_KIND,
    MessageText,
    PresenceIndex,
    line_present,
    request_texts,
    strip_stub_lists,
    term_set,
)
from ctxagent.tui.lab.bench.requirements import Line


def _present(line: str, text: str) -> bool:
    return line_present(line, term_set(line), MessageText(text))


def test_exact_and_fuzzy_matches() -> None:
    line = "Do not modify the tests directory or any fixture file."  # 10 distinct terms
    assert _present(line, f"  12→ - {line}\nnext line")  # verbatim inside a Read tool's numbered output
    # rewrapped over two lines and with one word changed: 9 of 10 terms in one window
    assert _present(line, "Summary:\n- [turn 1] Do not modify the tests\n  directory or any fixture files.")
    # 7 of 10 terms: below 0.8
    assert not _present(line, "We should modify the tests directory soon.")
    # the terms spread over lines further apart than the window are not a match
    assert not _present(line, "Do not modify\nx\ny\nz\nthe tests directory\nx\ny\nz\nor any fixture file.")


def test_chinese_lines_match_by_bigrams() -> None:
    line = "不要修改配置文件和数据库迁移脚本"
    assert _present(line, "约束：\n- 不要修改配置文件和数据库的迁移脚本")  # one extra character
    assert not _present(line, "请修改配置文件")


def test_stub_name_lists_do_not_count() -> None:
    counter = get_counter("o200k_base")
    body = "\n".join(f"line {i}: value {i * 7}" if i != 200 else "line 200: see src/module_200.py" for i in range(400))
    preview = pruned_text(body, counter, event_id=7)
    assert "files named in the cut part:" in preview and "module_200.py" in preview
    stripped = strip_stub_lists(preview)
    assert "module_200.py" not in stripped and "[pruned from view:" in stripped
    names = Message("user", "Files seen so far: helpers.py, app.py", kind=NAMES_KIND)
    tool = Message("tool", preview, tool_call_id="c1", name="bash")
    shown, bare = request_texts([names, tool])
    assert "helpers.py" in shown and "module_200.py" in shown
    assert "helpers.py" not in bare and "module_200.py" not in bare


def test_index_checks_new_lines_against_remembered_messages() -> None:
    idx = PresenceIndex()
    call = Message("assistant", "", tool_calls=[ToolCall("c1", "write", {"content": "Always use UTC timestamps in logs."})])
    user = Message("user", "Fix it. Never log the API key.")
    lines = [Line("requirement", "user", "Never log the API key.", 0)]
    assert idx.present([user, call], lines) == {0}
    lines.append(Line("requirement", "tool", "Always use UTC timestamps in logs.", 1))  # the list grows
    assert idx.present([user, call], lines) == {0, 1}  # found in the call's arguments, on a message seen before
    assert idx.present([call], lines) == {1}
    listing = Message("user", "Never log the API key.", kind=NAMES_KIND)
    assert idx.present([listing], lines) == set()  # the names baseline's list is never evidence
