"""Rule-based ingest from a real session log, provenance, and the warm block (seed 001 scenarios)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ctxagent.context.events import AssistantData, CompactionData, SessionStartData, ToolResultData, UserData
from ctxagent.context.history import SessionLog
from ctxagent.context.memory import MemoryStore
from ctxagent.context.memory.ingest import parse_summary
from ctxagent.context.memory.recall import MemoryRecall
from ctxagent.context.tokens import get_counter


class CharCounter:
    def count(self, text: str) -> int:
        return len(text) // 4 + 1


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    s = MemoryStore.open(tmp_path / "memory.db")
    yield s
    s.close()


def _log(tmp_path: Path, name: str = "s1") -> SessionLog:
    return SessionLog.create(tmp_path / "sessions", name)


def test_ingest_writes_typed_records_with_provenance(tmp_path: Path, store: MemoryStore) -> None:
    log = _log(tmp_path)
    log.append(SessionStartData(session="s1", model="m", cwd=str(tmp_path)))
    u = log.append(UserData(text="Don't modify config files. Use MySQL for the database. TODO: add login tests", turn=1))
    log.append(AssistantData(text="I'll look at db.py first.", tool_calls=[{"id": "c1", "name": "edit_file", "arguments": {}}]))
    e = log.append(ToolResultData(call_id="c1", name="edit_file", content="--- diff", is_error=False,
                   meta={"files": ["src/db.py"], "lines": {"src/db.py": [[3, 7], [12, 12]]}}))
    t = log.append(ToolResultData(call_id="c2", name="run_tests", content="== 3 passed, 1 failed ==", is_error=False,
                   meta={"tests": {"passed": 3, "failed": 1}}))
    log.append(ToolResultData(call_id="c3", name="edit_file", content="error: not unique", is_error=True, meta={}))
    log.close()
    events = SessionLog.load(log.path).events
    ids = store.ingest(events, "s1")
    recs = {r.type: r for r in store.list() if r.type != "turn"}
    assert set(recs) == {"constraint", "decision", "todo", "change", "note"}
    # and the words themselves, one cold turn record per user / assistant text (see test_memory_turns.py)
    turns = store.list(type="turn")
    assert [(r.tags[0], r.source_events, r.layer) for r in turns] == [("user", [u.id], "cold"), ("assistant", [u.id + 1], "cold")]
    assert recs["constraint"].content == "Don't modify config files." and recs["constraint"].pinned
    assert recs["change"].content == "edited src/db.py lines 3-7, 12" and recs["change"].files == ["src/db.py"]
    assert recs["note"].content == "tests failed: 3 passed, 1 failed" and "fail" in recs["note"].tags
    assert recs["todo"].content == "add login tests" and recs["todo"].status == "open"
    assert len(ids) == 7
    # provenance: each record leads back to the exact log line it came from
    lines = log.path.read_text(encoding="utf-8").splitlines()
    for rec, ev in ((recs["constraint"], u), (recs["change"], e), (recs["note"], t)):
        assert rec.session == "s1" and rec.source_events == [ev.id]
        assert json.loads(lines[rec.source_events[0]])["id"] == ev.id
    assert all(r.turn == 1 for r in recs.values())
    # idempotent per event id: a second ingest (or a re-run after a crash) adds nothing
    assert store.ingest(events, "s1") == []
    assert store.stats()["total"] == 7


def test_a_test_run_is_noted_by_the_rule_the_app_marks_it_with(tmp_path: Path, store: MemoryStore) -> None:
    """The exit code and the counts decide the note's words and tag (context/test_runs.py): an exit-1 run
    whose counts could not be read is a failure, not "0 passed … tagged pass"."""
    log = _log(tmp_path)
    log.append(UserData(text="run the tests", turn=1))
    runs = [
        ({"passed": 0, "failed": 0, "errors": 0, "skipped": 0}, 1, False),
        ({"passed": 0, "failed": 0, "errors": 2, "skipped": 0}, 2, True),
        ({"passed": 5, "failed": 0, "errors": 0, "skipped": 0}, 0, True),
        ({"passed": 0, "failed": 0, "errors": 0, "skipped": 0}, 5, True),
    ]
    for i, (counts, code, found) in enumerate(runs):
        log.append(ToolResultData(call_id=f"c{i}", name="run_tests", content="…", is_error=False,
                                  meta={"tests": counts, "exit_code": code, "counts_found": found}))
    log.close()
    store.ingest(SessionLog.load(log.path).events, "s1")
    notes = [(r.content, r.tags) for r in sorted(store.list(type="note"), key=lambda r: r.id)]
    assert notes == [
        ("tests failed: no pass/fail counts found in the output (exit 1)", ["tests", "fail"]),
        ("tests failed: 0 passed, 0 failed, 2 errors (exit 2)", ["tests", "fail"]),
        ("tests passed: 5 passed, 0 failed (exit 0)", ["tests", "pass"]),
        ("no tests ran: 0 passed, 0 failed (exit 5)", ["tests", "none"]),
    ]


def test_ingest_in_steps_keeps_turn_numbers(tmp_path: Path, store: MemoryStore) -> None:
    log = _log(tmp_path)
    log.append(UserData(text="start", turn=1))
    log.append(UserData(text="go on", turn=2))
    store.ingest(log.events, "s1")
    ev = log.append(ToolResultData(call_id="x", name="write_file", content="ok", is_error=False, meta={"files": ["a.txt"]}))
    store.ingest([ev], "s1")  # the agent ingests only the new events of a step
    assert store.list(type="change")[0].turn == 2


def test_seed_mysql_postgresql_through_ingest(tmp_path: Path, store: MemoryStore) -> None:
    log = _log(tmp_path)
    for turn in range(1, 13):
        text = {3: "Use MySQL for the database.", 10: "Actually, switch to PostgreSQL for the database instead of MySQL."}.get(
            turn, f"please tidy module{turn}.py")
        log.append(UserData(text=text, turn=turn))
    store.ingest(log.events, "s1")
    current = store.search("database", type="decision")
    assert [r.content for r in current] == ["Actually, switch to PostgreSQL for the database instead of MySQL."]
    everything = store.search("database", type="decision", include_superseded=True)
    assert len(everything) == 2
    block = MemoryRecall(store, "s1").warm_block("set up the database connection", [], 12, 500, CharCounter())
    assert "PostgreSQL" in block and "Use MySQL" not in block
    assert "[decision t10, by the user]" in block


def test_constraint_survives_30_noisy_turns_in_every_warm_block(tmp_path: Path, store: MemoryStore) -> None:
    """Seed 001 §1.2: a constraint from turn 1 is in the warm block of every later step."""
    log = _log(tmp_path)
    recall = MemoryRecall(store, "s1")
    counter = get_counter("cl100k_base") if callable(get_counter) else CharCounter()
    log.append(UserData(text="Don't modify config files.", turn=1))
    store.ingest(log.events, "s1")
    for turn in range(2, 33):
        new = [log.append(UserData(text=f"Now refactor helper_{turn} in utils_{turn}.py and explain step {turn}.", turn=turn)),
               log.append(AssistantData(text=f"Refactored helper_{turn}; all good.", tool_calls=[])),
               log.append(ToolResultData(call_id=f"c{turn}", name="edit_file", content="ok", is_error=False,
                          meta={"files": [f"utils_{turn}.py"], "lines": {f"utils_{turn}.py": [[1, 5]]}}))]
        store.ingest(new, "s1")
        block = recall.warm_block(f"refactor helper_{turn}", [f"utils_{turn}.py"], turn, 400, counter)
        assert "[constraint t1] Don't modify config files." in block, turn
        assert counter.count(block) <= 400
    # aging moved the old changes to cold; the pinned constraint stayed warm
    assert store.get(store.list(type="constraint")[0].id).layer == "warm"
    assert store.list(type="change", layer="cold")


def test_warm_block_contents_order_cap_and_determinism(store: MemoryStore) -> None:
    store.add("Never push to main", "constraint", turn=1)
    store.add("update the changelog", "todo", turn=2)
    done = store.add("rename the package", "todo", turn=2)
    store.set_status(done, "done")
    for i in range(30):
        store.add(f"edited src/parser.py around function parse_{i}", "change", files=["src/parser.py"], turn=3 + i)
    recall = MemoryRecall(store, "s", top_k=8)
    block = recall.warm_block("fix the parser", ["src/parser.py"], 33, 2000, CharCounter())
    lines = block.splitlines()
    assert lines[0] == "<context-memory>" and lines[-1] == "</context-memory>"
    assert lines[2] == "- [constraint t1] Never push to main"
    assert lines[3] == "- [todo open t2] update the changelog"
    assert "rename the package" not in block
    assert sum("[change" in x for x in lines) == 8
    assert block == recall.warm_block("fix the parser", ["src/parser.py"], 33, 2000, CharCounter())
    small = recall.warm_block("fix the parser", ["src/parser.py"], 33, 80, CharCounter())
    assert CharCounter().count(small) <= 80 and "Never push to main" in small and "omitted" in small
    assert MemoryRecall(MemoryStore.open(":memory:"), "s").warm_block("x", [], 1, 500, CharCounter()) == ""


def test_compaction_summary_becomes_records(tmp_path: Path, store: MemoryStore) -> None:
    summary = """Decisions:
- Use PostgreSQL for the database (turn 4)
Constraints:
- Never edit generated files
Changes:
- src/models.py: edited (turn 5)
Open tasks:
- add an index on users.email
"""
    assert parse_summary(summary) == [
        ("decision", "Use PostgreSQL for the database (turn 4)"), ("constraint", "Never edit generated files"),
        ("change", "src/models.py: edited (turn 5)"), ("todo", "add an index on users.email")]
    assert parse_summary("Decisions:\n- none\nConstraints:\n- none\nChanges: none\nOpen tasks:\n- none") == []
    log = _log(tmp_path)
    for turn in range(1, 7):
        log.append(UserData(text=f"step {turn}", turn=turn))
    c = log.append(CompactionData(first_id=0, last_id=5, summary=summary, method="extractive"))
    store.ingest(log.events, "s1")
    types = sorted(r.type for r in store.list() if r.type != "turn")  # the six "step N" turns are kept too
    assert types == ["change", "constraint", "decision", "summary", "todo"]
    dec = store.list(type="decision")[0]
    assert dec.turn == 4 and dec.source_events == [c.id]
    assert store.list(type="summary")[0].layer == "cold"
    assert store.list(type="change")[0].files == ["src/models.py"]


def test_chinese_constraint_and_decision_detection(tmp_path: Path, store: MemoryStore) -> None:
    log = _log(tmp_path)
    log.append(UserData(text="不要修改配置文件。我们决定用 JWT 做用户登录认证。", turn=1))
    store.ingest(log.events, "s1")
    assert [r.content for r in store.list(type="constraint")] == ["不要修改配置文件。"]
    assert [r.content for r in store.list(type="decision")] == ["我们决定用 JWT 做用户登录认证。"]
    assert store.search("改一下登录逻辑")[0].type == "decision"
    assert store.search("config settings")[0].type == "constraint"  # 配置 ↔ config
