"""Stale tool results: re-asked questions and reads of files edited since."""

from __future__ import annotations

from ctxagent.context.history import Event
from ctxagent.context.superseded import superseded_results


def _log(steps: list[tuple[str, dict, bool]]) -> list[Event]:
    events: list[Event] = [Event(0, "user", {"text": "go", "turn": 1})]
    for i, (name, args, is_error) in enumerate(steps):
        cid = f"c{i}"
        events.append(Event(len(events), "assistant", {"text": "", "tool_calls": [{"id": cid, "name": name, "arguments": args}]}))
        events.append(Event(len(events), "tool_result", {"call_id": cid, "name": name, "content": "x", "is_error": is_error}))
    return events


def test_same_question_again_supersedes_the_older_answer() -> None:
    ev = _log([
        ("read_file", {"path": "a.py"}, False),       # 2: superseded by 8
        ("run_tests", {}, False),                     # 4: superseded by 10
        ("grep", {"pattern": "foo"}, False),          # 6: never asked again
        ("read_file", {"path": "./a.py"}, False),     # 8: newest read
        ("run_tests", {}, False),                     # 10: newest run
        ("read_file", {"path": "a.py", "start_line": 5}, False),  # 12: another range, its own question
    ])
    assert superseded_results(ev) == {2, 4}


def test_a_read_is_stale_once_the_file_is_edited() -> None:
    ev = _log([
        ("read_file", {"path": "calc.py"}, False),                                  # 2: stale after the edit
        ("edit_file", {"path": "calc.py", "old_text": "-", "new_text": "+"}, False),
        ("read_file", {"path": "other.py"}, False),                                 # 6: untouched file
        ("edit_file", {"path": "other.py", "old_text": "a", "new_text": "b"}, True),  # a failed edit changes nothing
    ])
    assert superseded_results(ev) == {2}


def test_a_failed_retry_does_not_supersede_a_real_answer() -> None:
    ev = _log([("shell", {"command": "make"}, False), ("shell", {"command": "make"}, True)])
    assert superseded_results(ev) == set()


def test_the_builder_prunes_a_stale_answer_before_an_older_live_one() -> None:
    import math

    from ctx_helpers import Log, numbered_lines, run
    from ctxagent.context.budget import Budget

    log = Log()
    log.user("Go.")
    older = log.step("read_file", {"path": "b.py"}, numbered_lines(200, "bee"))
    stale = log.step("read_file", {"path": "a.py"}, numbered_lines(200, "aaa"))
    log.step("read_file", {"path": "a.py"}, numbered_lines(200, "aaa"))  # the same question, answered again
    log.user("next")
    log.user("and next")
    full = run(log, strategy="full")
    res = run(log, protect_turns=2, budget=Budget(full.report.total + 4096 - 100, max_output=4096, tools_high=math.inf))
    assert res.pruned_ids == [stale.id] and older.id not in res.pruned_ids
