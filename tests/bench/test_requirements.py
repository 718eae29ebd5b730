"""Requirement / decision / test-failure lines: what the bench's own rule finds in hand-made text, from which
events, and that the rule shares no code and no pattern with the product's detectors."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ctxagent.tui.lab.bench import requirements
from ctxagent.tui.lab.bench.requirements import (
    LineTracker,
    decision_lines,
    failing_test_lines,
    is_spec_read,
    lines_of_event,
    pattern_lists,
    requirement_lines,
    split_sentences,
)


def test_requirement_markers_in_english_and_chinese() -> None:
    text = ("Please fix the login bug. Do not touch the migrations folder. The API must stay idempotent.\n"
            "We have no schema migrations in this task. No problem at all.\n"
            "不要修改配置文件。只修改 src 目录下的代码。这只是一个例子。必须保留现有接口。")
    assert requirement_lines(text) == [
        "Do not touch the migrations folder.",
        "The API must stay idempotent.",
        "We have no schema migrations in this task.",
        "不要修改配置文件。",
        "只修改 src 目录下的代码。",
        "必须保留现有接口。",
    ]


def test_bullets_under_a_rule_heading_count_without_a_marker() -> None:
    spec = ("## Goal\n- Make annotations durable across restarts.\n\n"
            "## Architecture constraints\n- Keep existing terminal annotation behavior working.\n"
            "- Use Ash resources and SQLite migrations; no ad-hoc SQL outside migrations.\n\n"
            "Definition of Done:\n- `mix compile` passes without warnings.\n\n"
            "## Notes\n- Talk to the design team about colours.\n")
    assert requirement_lines(spec) == [
        "Keep existing terminal annotation behavior working.",
        "Use Ash resources and SQLite migrations; no ad-hoc SQL outside migrations.",
        "`mix compile` passes without warnings.",
    ]


def test_code_is_never_a_requirement() -> None:
    text = ("Here is the function:\n```python\n# never call this twice\ndef f(x):\n    return x  # must be positive\n```\n"
            "    if (x == null) { throw new Error('must not be null'); }\n"
            "  12→    # do not edit below this line\n"
            "The value must never be negative in production.\n")
    assert requirement_lines(text) == ["The value must never be negative in production."]


def test_decisions_and_questions() -> None:
    text = ("Let's use PostgreSQL for the event store. Should we use Redis instead of memcached?\n"
            "I'll go with the streaming parser instead of the DOM one.\n决定改用 SQLite 保存会话。Maybe later.")
    assert decision_lines(text) == [
        "Let's use PostgreSQL for the event store.",
        "I'll go with the streaming parser instead of the DOM one.",
        "决定改用 SQLite 保存会话。",
    ]


def test_failing_test_lines_from_four_runners() -> None:
    out = ("tests/test_a.py::test_ok PASSED\n"
           "FAILED tests/test_a.py::test_parse - AssertionError: 1 != 2\n"
           "ERROR tests/test_b.py::test_db\n"
           "FAIL: test_round (pkg.tests.TestMath)\n"
           "--- FAIL: TestHandler (0.01s)\n"
           "  1) test mount renders the page (SpotterWeb.PageLiveTest)\n"
           "FAILED tests/test_a.py::test_parse - AssertionError: again\n"
           "tests/test_c.py::test_verbose FAILED\n"
           "test parser::tests::it_works ... FAILED\n"
           "● Parser › handles empty input\n"
           "rspec ./spec/models/user_spec.rb:12 # User is valid\n")
    assert failing_test_lines(out) == [
        "FAILED tests/test_a.py::test_parse",
        "ERROR tests/test_b.py::test_db",
        "FAIL: test_round (pkg.tests.TestMath)",
        "--- FAIL: TestHandler",
        "test mount renders the page (SpotterWeb.PageLiveTest)",
        "tests/test_c.py::test_verbose",
        "parser::tests::it_works",
        "Parser › handles empty input",
        "./spec/models/user_spec.rb:12",
    ]


def test_more_binding_phrases_than_markers() -> None:
    text = ("The parser has to accept empty files. Changing the wire format is not allowed. Leave the public API as is.\n"
            "Use exclusively the standard library. Keep going with the tests. Refrain from adding flags.\n"
            "保持现有接口不变。不仅如此，这只是一个例子。")
    assert requirement_lines(text) == [
        "The parser has to accept empty files.", "Changing the wire format is not allowed.",
        "Leave the public API as is.", "Use exclusively the standard library.", "Refrain from adding flags.",
        "保持现有接口不变。"]
    # a sentence ends at ; too
    assert split_sentences("Do not touch the tests; keep the API. Then ship it.") == [
        "Do not touch the tests;", "keep the API.", "Then ship it."]


def test_which_tool_calls_read_a_spec() -> None:
    assert is_spec_read("Bash", {"command": "bd show spotter-gqc 2>/dev/null"})
    assert is_spec_read("shell", {"command": "gh issue view 12 --comments"})
    assert is_spec_read("bash", {"command": "issues show 11"})
    assert is_spec_read("bash", {"command": "cat docs/DESIGN.md | head -50"})
    assert is_spec_read("Read", {"file_path": "/repo/SPEC.md"})
    assert is_spec_read("WebFetch", {"url": "https://example.com/rfc"})
    assert not is_spec_read("Read", {"file_path": "/repo/src/app.py"})
    assert not is_spec_read("bash", {"command": "cat src/app.py && pytest -q"})
    assert not is_spec_read("bash", {"command": "git show HEAD"})
    assert is_spec_read("bash", {"command": "az boards work-item show --id 7"})
    assert is_spec_read("Read", {"file_path": "/repo/README"})
    assert not is_spec_read("Write", {"file_path": "/repo/NOTES.md", "content": "- must"})


def test_lines_of_event_by_source() -> None:
    spec_call = {"id": "c1", "name": "Bash", "arguments": {"command": "bd show x-1"}}
    code_call = {"id": "c2", "name": "Read", "arguments": {"file_path": "src/app.py"}}
    spec = "## Constraints\n- Never log the API key anywhere.\nWe decided to keep the CLI flags stable."
    from_spec = lines_of_event("tool_result", {"content": spec, "call_id": "c1"}, 5, spec_call)
    assert [(x.kind, x.origin, x.text, x.event) for x in from_spec] == [
        ("requirement", "tool", "Never log the API key anywhere.", 5),
        ("requirement", "tool", "We decided to keep the CLI flags stable.", 5),  # "keep … stable" binds, too
        ("decision", "tool", "We decided to keep the CLI flags stable.", 5)]
    # the same words in a source file are not a spec; a failing test anywhere is a requirement
    assert lines_of_event("tool_result", {"content": spec + "\nFAILED t.py::test_x - boom"}, 6, code_call) == [
        lines_of_event("tool_result", {"content": "FAILED t.py::test_x"}, 6, None)[0]]
    said = lines_of_event("assistant", {"text": "Never mind. Let's use the cached counter instead of re-tokenizing."}, 7)
    assert [(x.kind, x.origin) for x in said] == [("decision", "assistant")]  # the agent states decisions, not rules


def test_tracker_keeps_the_first_statement_of_each_line() -> None:
    t = LineTracker()
    t.add("user", {"text": "Do not touch the migrations folder."}, 0)
    t.add("assistant", {"text": "", "tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": "issues show 3"}}]}, 1)
    new = t.add("tool_result", {"call_id": "c1", "content": "- Do not touch the migrations folder!\n- You must keep the v1 API."}, 2)
    assert [x.text for x in new] == ["You must keep the v1 API."]  # the repeat (same terms) is not new
    assert [(x.origin, x.event) for x in t.lines] == [("user", 0), ("tool", 2)]


# -- independence from the product ---------------------------------------------------------------------
def _imports(module: object) -> list[str]:
    tree = ast.parse(Path(str(getattr(module, "__file__", ""))).read_text(encoding="utf-8"))
    return [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + [
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]


def test_the_rule_imports_nothing_of_the_product() -> None:
    from ctxagent.tui.lab.bench import presence

    assert not [m for m in _imports(requirements) if m.startswith("ctxagent")]
    # ... and what matches a line in a request does not use the product's memory terms either
    assert not [m for m in _imports(presence) if m.startswith(("ctxagent.context.memory", "ctxagent.context.tool_meta"))]


def test_no_word_list_is_a_subset_of_the_products_patterns() -> None:
    """Every list holds entries none of the product's patterns matches (at least a fifth of it), so the rule is
    not the product's detector with fewer words."""
    from ctxagent.context import tool_meta
    from ctxagent.context.language import detect

    product: dict[str, list[re.Pattern[str]]] = {
        "requirement": [detect.REQUIREMENT_MARKERS_EN, detect.CONSTRAINT_MARKERS_EN],
        "requirement_zh": [detect.REQUIREMENT_MARKERS_ZH, detect.CONSTRAINT_MARKERS_ZH],
        "decision": [detect.DECISION_MARKERS_EN, detect.DECISION_IMPERATIVE_EN],
        "decision_zh": [detect.DECISION_MARKERS_ZH],
        "rule_headings": [detect.RULE_HEADING],
        "issue_tools": [tool_meta._ISSUE_COMMAND],
    }
    sets = {"spec_extensions": tool_meta.DOCUMENT_EXTENSIONS, "web_tools": tool_meta.WEB_TOOLS}
    lists = pattern_lists()
    for name, patterns in product.items():
        words = list(lists[name])
        probe = (lambda w: f" {w} show 7") if name == "issue_tools" else (lambda w: w)
        own = [w for w in words if not any(p.search(probe(w)) for p in patterns)]
        assert len(own) * 5 >= len(words), (name, own)
    for name, theirs in sets.items():
        own = [w for w in lists[name] if w not in theirs]
        assert len(own) * 5 >= len(lists[name]) or len(own) >= 2, (name, own)
    # the failing-test runners: lines the product's pattern does not read
    for line in ("tests/test_c.py::test_verbose FAILED", "test parser::tests::it_works ... FAILED",
                 "rspec ./spec/models/user_spec.rb:12 # User is valid"):
        assert failing_test_lines(line) and not detect.FAILING_TEST.match(line), line


def test_the_rule_and_the_products_detector_disagree_on_a_spec() -> None:
    from ctxagent.context.language.detect import detect_requirements

    spec = ("## Restrictions\n- Pure functions and the standard library.\n"
            "The cache should be warm before the first call.\n"
            "It has to stay backward compatible with v1.\n"
            "The reader does not buffer input.\n")
    ours, theirs = set(requirement_lines(spec)), set(detect_requirements(spec))
    assert "Pure functions and the standard library." in ours - theirs  # a rules heading the product does not know
    assert "It has to stay backward compatible with v1." in ours - theirs
    assert "The reader does not buffer input." in theirs - ours  # a description, not a rule, for the bench
