"""`retire_after`: what a rewind takes back is no longer recalled, yet nothing is deleted."""

from __future__ import annotations

from pathlib import Path

from ctxagent.context.memory import MemoryStore
from ctxagent.context.memory.recall import MemoryRecall
from ctxagent.context.tokens import get_counter


def _store(tmp_path: Path) -> MemoryStore:
    return MemoryStore.open(tmp_path / "memory.db")


def test_records_of_rewound_turns_leave_search_and_recall_but_stay_listed(tmp_path: Path) -> None:
    store = _store(tmp_path)
    kept = store.add("Never edit setup.cfg", "constraint", session="s", turn=1)
    change = store.add("[change t2] edited calc.py", "change", session="s", turn=2, files=["calc.py"])
    tests = store.add("tests: 3 passed", "note", session="s", turn=3)
    other = store.add("edited calc.py in another session", "change", session="other", turn=5, files=["calc.py"])
    assert store.retire_after("s", 2) == 2
    assert store.retire_after("s", 2) == 0  # idempotent
    found = {r.id for r in store.search("calc.py edited")}
    assert change not in found and other in found
    assert not store.search("tests passed")
    block = MemoryRecall(store, "s").warm_block("fix calc.py", ["calc.py"], 4, 2000, get_counter("o200k_base"))
    assert "Never edit setup.cfg" in block and "[change t2]" not in block and "3 passed" not in block
    listed = {r.id: r for r in store.list()}
    assert {kept, change, tests, other} <= set(listed)  # retired, not deleted
    assert not listed[change].current and listed[kept].current
    assert store.search("tests passed", include_superseded=True)  # history still finds them
    store.close()


def test_a_retired_decision_gives_the_superseded_one_back(tmp_path: Path) -> None:
    store = _store(tmp_path)
    mysql = store.add("Use MySQL for the database.", "decision", session="s", turn=1)
    pg = store.add("Use PostgreSQL for the database instead.", "decision", session="s", turn=2)
    assert store.get(mysql).superseded_by == pg  # type: ignore[union-attr]
    store.retire_after("s", 2)
    assert store.get(mysql).current  # type: ignore[union-attr]
    assert [r.id for r in store.search("database")] == [mysql]
    store.close()


def test_said_again_after_the_rewind_revives_the_record(tmp_path: Path) -> None:
    store = _store(tmp_path)
    rid = store.add("edited calc.py", "change", session="s", turn=2, files=["calc.py"])
    store.retire_after("s", 2)
    again = store.add("edited calc.py", "change", session="s", turn=2, files=["calc.py"])
    assert again == rid
    rec = store.get(rid)
    assert rec is not None and rec.current and rec.layer == "warm" and rec.turn == 2
    assert [r.id for r in store.search("calc.py")] == [rid]
    store.close()
