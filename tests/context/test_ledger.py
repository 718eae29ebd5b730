"""The session ledger: constraints, decisions (superseded), changed files, failing tests and quoted
requirements survive pruning, spilling and compaction of the messages they came from."""

from __future__ import annotations

import re

from ctxagent.context.builder.dispatch import build
from ctxagent.context.language.detect import detect_requirements, failing_tests
from ctxagent.context.ledger import MAX_FILES_NAMED, QUOTES_HEAD, Ledger, files_line, result_facts

from .ctx_helpers import Log, counter, inputs

ISSUE = """# spotter-42: export annotations
Users can export a project's annotations as CSV.
""" + "".join(f"Background {i}: the annotation table grew from the review workflow in release {i}.\n" for i in range(40)) + """

## Constraints
- Keep the exporter a pure function of the rows
- 不要修改数据库模式

The export must stream rows; it should not load everything into memory.
Do not add a new dependency for CSV writing.
```elixir
def export(rows), do: must_not_matter(rows)
```
Nice to have: a progress bar.
"""


def test_requirement_detector_keeps_rules_and_skips_code_and_chatter() -> None:
    lines = detect_requirements(ISSUE)
    assert lines == ["Keep the exporter a pure function of the rows", "不要修改数据库模式",
                     "The export must stream rows; it should not load everything into memory.",
                     "Do not add a new dependency for CSV writing."]
    assert failing_tests("FAILED tests/test_x.py::test_a - boom\n1 failed, 3 passed") == ["FAILED tests/test_x.py::test_a - boom"]


def _issue_session() -> Log:
    log = Log()
    log.user("Implement spotter-42. Never touch the migrations folder.")
    log.step("bash", {"command": "gh issue view 42"}, ISSUE, meta=result_facts("bash", {"command": "gh issue view 42"}, ISSUE))
    log.step("edit_file", {"path": "lib/export.ex"}, "ok", meta={"files": ["lib/export.ex"], "changed_files": ["lib/export.ex"]})
    log.step("bash", {"command": "mix test"}, "1) test export streams (ExportTest)\nFAILED test/export_test.exs::streams\n1 failure")
    log.assistant("We'll use NimbleCSV for the writer.")
    log.assistant("Actually, let's use a hand-written writer for the CSV instead of NimbleCSV.")
    return log


def test_the_ledger_folds_what_the_session_established() -> None:
    ledger = Ledger().feed(_issue_session().events)
    tail = ledger.tail_block(4000, counter())
    assert "Never touch the migrations folder." in tail
    assert "lib/export.ex (turn 1)" in tail
    assert "FAILED test/export_test.exs::streams" in tail
    assert "hand-written writer" in tail and "NimbleCSV for the writer" not in tail  # superseded
    (quote,) = ledger.quotes
    assert quote.source == "gh issue view 42" and "不要修改数据库模式" in quote.lines


def test_a_passing_test_run_clears_the_failures() -> None:
    log = _issue_session()
    log.step("bash", {"command": "mix test"}, "12 tests, 0 failures")
    assert "Failing tests" not in Ledger().feed(log.events).tail_block(4000, counter())


def test_a_rule_that_drops_the_oldest_first_and_says_so() -> None:
    log = Log()
    for i in range(40):
        log.user(f"Never rename module number {i} in the codebase.")
    tail = Ledger().feed(log.events).tail_block(300, counter())
    assert counter().count(tail) <= 300 and "older items omitted" in tail and "module number 39" in tail


def test_quotes_ride_with_the_cut_output() -> None:
    log = _issue_session()
    for i in range(30):  # enough later tool traffic that the issue's output is pruned from view
        log.step("read_file", {"path": f"lib/m{i}.ex"}, "\n".join(f"line {j} of module {i} " * 3 for j in range(60)))
    log.user("Continue.")
    res = build(inputs(log, window=32_000, max_output=1024))
    assert res.compaction is None
    issue_event = next(e.id for e in log.events if e.kind == "tool_result" and "spotter-42" in e.tool_result.content)
    assert issue_event in res.pruned_ids
    shown = next(m.content for m in res.request.messages if m.event_id == issue_event)
    assert QUOTES_HEAD in shown and "Do not add a new dependency for CSV writing." in shown
    # the user's own constraint: in its message, which is still shown, so not repeated in the block
    said = [m for m in res.request.messages if m.role == "user" and "Never touch the migrations folder." in m.content]
    assert [m.kind for m in said] == ["message"] and "Never touch the migrations folder." not in res.warm_text


def test_quotes_of_a_compacted_document_go_into_the_summary() -> None:
    log = _issue_session()
    for t in range(12):
        log.user(f"Next part {t}: " + "explain the design in detail " * 150)
        log.step("read_file", {"path": f"lib/n{t}.ex"}, "\n".join(f"x{j} = {j} * {t}" for j in range(200)))
    res = build(inputs(log, window=12_000, max_output=1024))
    assert res.compaction is not None
    log.add("compaction", **res.compaction.to_data())
    again = build(inputs(log, window=12_000, max_output=1024))
    summary = next(m.content for m in again.request.messages if m.kind == "summary")
    assert "Requirements quoted from documents" in summary and "不要修改数据库模式" in summary
    # the files read and changed in the compacted part are named, with the event that shows each
    assert "Files read or changed in the summarized part" in summary
    edit_event = next(e.id for e in log.events if e.kind == "tool_result" and e.tool_result.meta.changed_files)
    assert f"lib/export.ex (event {edit_event})" in summary and "lib/n0.ex (event" in summary


def test_the_files_line_names_each_file_once_at_its_newest_event_and_caps_the_list() -> None:
    touched = [(5, "a.py"), (7, "b.py"), (9, "a.py"), (300, "late.py")] + [(10 + i, f"m{i}.py") for i in range(50)]
    touched.append((70, "b.py"))
    line = files_line(touched, 1, 100)
    assert "late.py" not in line and "b.py (event 70)" in line and "b.py (event 7)" not in line
    assert line.count(".py (event") == MAX_FILES_NAMED and "and 12 more" in line
    assert not re.search(r"\ba\.py", line)  # the oldest touched files are the ones left out
    assert files_line(touched, 100, 200) == ""


def test_the_block_leaves_out_what_the_request_still_shows_in_its_own_message() -> None:
    log = Log()
    log.user("Never touch the migrations folder. TODO: export as CSV")
    log.assistant("We'll use the csv module from the standard library.")
    log.add("memory", op="remember", type="constraint", text="Use tabs, not spaces", turn=1)
    log.user("不要修改数据库模式。")
    ledger = Ledger().feed(log.events)
    everything = ledger.tail_block(4000, counter())
    for line in ("Never touch the migrations folder", "export as CSV", "csv module", "Use tabs", "不要修改数据库模式"):
        assert line in everything
    shown = ledger.tail_block(4000, counter(), masked=[])  # no compaction: every message is shown
    assert "Use tabs, not spaces" in shown  # a /remember pin has no message of its own: always in the block
    assert not any(x in shown for x in ("migrations folder", "export as CSV", "csv module", "不要修改数据库模式"))
    first_two = ledger.tail_block(4000, counter(), masked=[(0, 1)])  # a summary replaced the first two messages
    assert all(x in first_two for x in ("migrations folder", "export as CSV", "csv module"))
    assert "不要修改数据库模式" not in first_two
    assert ledger.tail_block(4000, counter(), masked=[]) == shown  # the ledger itself is unchanged (a copy is filtered)
