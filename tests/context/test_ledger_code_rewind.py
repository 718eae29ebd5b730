"""The session ledger folds a code rewind (a `code_rewind` event, issue 24 item 2): the files list and
the test state go back to before the rewound turn, while the conversation stays — and the working
memory says so."""

from __future__ import annotations

from ctxagent.context.ledger import Ledger

from .ctx_helpers import Log, counter

FAILING = "FAILED tests/test_calc.py::test_add - assert -1 == 5\n1 failed, 2 passed in 0.1s"


def _changed(log: Log, path: str) -> None:
    log.step("edit_file", {"path": path, "old_text": "a", "new_text": "b"}, "ok",
             meta={"files": [path], "changed_files": [path]})


def _session() -> Log:
    log = Log()
    log.user("add a subtraction")  # turn 1: calc.py changed, a test fails
    _changed(log, "calc.py")
    log.step("run_tests", {}, FAILING)
    log.user("fix it")  # turn 2: calc.py again and a new file, the tests pass
    _changed(log, "calc.py")
    _changed(log, "helpers.py")
    log.step("run_tests", {}, "3 passed in 0.1s")
    log.user("and the docs")  # turn 3: README changed, but by hand since: the rewind could not restore it
    _changed(log, "README.md")
    return log


def test_a_code_rewind_takes_the_rewound_turns_out_of_the_files_list_and_the_test_state() -> None:
    log = _session()
    before = Ledger().feed(log.events)
    assert before.failing is None and set(before.changed) == {"calc.py", "helpers.py", "README.md"}
    to_id = next(e.id for e in log.events if e.kind == "user" and e.data["turn"] == 2)
    notice = log.add("code_rewind", to_id=to_id, turn=2, restored=["calc.py"], deleted=["helpers.py"],
                     skipped=["README.md"])
    ledger = Ledger().feed(log.events)
    assert ledger.changed == {"calc.py": [1], "README.md": [3]}  # turn 1's change stays; a file not restored keeps its turns
    assert ledger.failing is not None and ledger.failing[1] == ("FAILED tests/test_calc.py::test_add - assert -1 == 5",)
    tail = ledger.tail_block(4000, counter())
    assert f"[event {notice.id}] the user rewound the code to before turn 2" in tail
    assert "turns 2–3 changed is undone" in tail and "deleted: helpers.py" in tail
    assert "not restored (changed outside the agent): README.md" in tail
    assert "helpers.py (turn 2)" not in tail and "calc.py (turn 1)" in tail
    # the ledger folded from a copy gives the same (the builder folds incrementally)
    step = Ledger().feed(log.events[:notice.id]).copy().feed(log.events[notice.id:])
    assert step.changed == ledger.changed and step.failing == ledger.failing


def test_a_run_after_the_rewind_settles_the_test_state_again() -> None:
    log = _session()
    to_id = next(e.id for e in log.events if e.kind == "user" and e.data["turn"] == 2)
    log.add("code_rewind", to_id=to_id, turn=2, restored=["calc.py"], deleted=["helpers.py"])
    log.user("run them again")
    log.step("run_tests", {}, "3 passed in 0.1s")
    _changed(log, "calc.py")
    ledger = Ledger().feed(log.events)
    assert ledger.failing is None and ledger.changed["calc.py"] == [1, 4]
