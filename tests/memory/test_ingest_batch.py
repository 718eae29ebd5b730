"""Ingest writes a batch of events in one transaction (each event a savepoint of it): the same records
as one event at a time, one commit, and an event that fails leaves nothing and is retried later while
what came before it is kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from ctxagent.context.events import AssistantData, ToolResultData, UserData
from ctxagent.context.history import Event, SessionLog
from ctxagent.context.memory import MemoryStore, ingest as ingest_mod


def _events(tmp_path: Path) -> list[Event]:
    log = SessionLog.create(tmp_path / "sessions", "s1")
    log.append(UserData(text="Don't modify config files. 改用 MySQL 数据库. TODO: add login tests", turn=1))
    log.append(AssistantData(text="We'll use the iterative walker.", tool_calls=[{"id": "c1", "name": "edit_file", "arguments": {}}]))
    log.append(ToolResultData(call_id="c1", name="edit_file", content="--- diff", is_error=False,
                              meta={"files": ["src/db.py"], "lines": {"src/db.py": [[3, 7]]}}))
    log.append(UserData(text="Now the parser: never use recursion there", turn=2))
    return list(log.events)


def _rows(store: MemoryStore) -> list[tuple[object, ...]]:
    return store.conn.execute("SELECT type, content, layer, pinned, status, turn, session FROM records ORDER BY id").fetchall()


def test_a_batch_is_one_commit_with_the_same_records(tmp_path: Path) -> None:
    events = _events(tmp_path)
    one = MemoryStore.open(tmp_path / "one.db", embeddings=False)
    for ev in events:
        one.ingest([ev], "s1")
    batch = MemoryStore.open(tmp_path / "batch.db", embeddings=False)
    statements: list[str] = []
    batch.conn.set_trace_callback(statements.append)
    ids = batch.ingest(events, "s1")
    batch.conn.set_trace_callback(None)
    assert ids and _rows(batch) == _rows(one)
    assert sum(s.strip().upper() == "COMMIT" for s in statements) == 1
    assert batch.ingest(events, "s1") == []  # claimed once: a second ingest writes nothing
    assert _rows(batch) == _rows(one)
    one.close()
    batch.close()


def test_a_failing_event_is_undone_alone_and_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = _events(tmp_path)
    store = MemoryStore.open(tmp_path / "m.db", embeddings=False)
    real = ingest_mod._records_for

    def flaky(st: MemoryStore, ev: Event, session: str, turn: int) -> list[int]:
        if ev.kind == "tool_result":
            real(st, ev, session, turn)  # its writes happen, then it fails: the savepoint undoes them
            raise RuntimeError("disk hiccup")
        return real(st, ev, session, turn)

    monkeypatch.setattr(ingest_mod, "_records_for", flaky)
    with pytest.raises(RuntimeError, match="disk hiccup"):
        store.ingest(events, "s1")
    claimed = [r[0] for r in store.conn.execute("SELECT event_id FROM ingested ORDER BY event_id")]
    assert claimed == [events[0].id, events[1].id]  # before the failure: kept; it and after: not
    assert not store.list(file="src/db.py")
    monkeypatch.setattr(ingest_mod, "_records_for", real)
    store.ingest(events, "s1")
    fresh = MemoryStore.open(tmp_path / "fresh.db", embeddings=False)
    fresh.ingest(events, "s1")
    assert _rows(store) == _rows(fresh)
    assert store.list(file="src/db.py")
    store.close()
    fresh.close()
