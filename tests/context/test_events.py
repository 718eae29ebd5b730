"""The typed session log: payloads validated on append and on load, bad lines kept as placeholders
(ids stay aligned), a lock against a second writer, files created 0600, text that never crashes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from ctxagent.context.errors import HistoryError
from ctxagent.context.events import (
    AssistantData,
    CompactionData,
    RewindData,
    SessionStartData,
    ToolMeta,
    ToolResultData,
    UserData,
)
from ctxagent.context.history import SessionLog, view


def test_typed_append_round_trips_and_the_turn_is_tracked(tmp_path: Path) -> None:
    with SessionLog.create(tmp_path, "s1") as log:
        log.append(UserData(text="不要修改配置文件", turn=1))
        log.append(AssistantData(text="ok", tool_calls=[{"id": "c1", "name": "edit_file", "arguments": {"path": "a.py"}}]))
        log.append(ToolResultData(call_id="c1", name="edit_file", content="done", meta=ToolMeta(changed_files=["a.py"])))
        assert log.turn == 1 and log.next_turn == 2
    loaded = SessionLog.load(tmp_path / "s1.jsonl")
    assert loaded.events[0].user.text == "不要修改配置文件" and loaded.turn == 1
    assert loaded.events[1].assistant.tool_calls[0].arguments == {"path": "a.py"}
    assert loaded.events[2].tool_result.meta.changed_files == ["a.py"]
    with pytest.raises(HistoryError, match="not 'user'"):
        _ = loaded.events[1].user


def test_append_refuses_a_malformed_payload_and_a_wrong_planned_id(tmp_path: Path) -> None:
    with SessionLog.create(tmp_path, "s2") as log:
        with pytest.raises(HistoryError, match="rewind"):
            log.append(RewindData.model_construct())  # built unvalidated, without its to_id: append validates
        with pytest.raises(HistoryError, match="planned event id 5"):
            log.append(CompactionData(first_id=0, last_id=0, summary="x"), expect_id=5)
        assert log.events == [] and (tmp_path / "s2.jsonl").read_text() == ""


BAD_LINES = [
    {"id": 2, "kind": "rewind", "ts": 0, "data": {}},  # missing to_id
    {"id": 3, "kind": "user", "ts": 0, "data": {"text": "hi", "turn": "x"}},  # turn not a number
    {"id": 4, "kind": "assistant", "ts": 0, "data": {"text": "", "tool_calls": [{"name": "read_file"}]}},  # call without id
    {"id": 5, "kind": "compaction", "ts": 0, "data": {"first_id": "a", "last_id": 1}},
]


def test_valid_json_with_bad_fields_is_kept_as_a_placeholder_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "s3.jsonl"
    good = [{"id": 0, "kind": "user", "ts": 0, "data": {"text": "first", "turn": 1}},
            {"id": 1, "kind": "assistant", "ts": 0, "data": {"text": "reply"}}]
    tail = [{"id": 6, "kind": "user", "ts": 0, "data": {"text": "last", "turn": 2}},
            {"id": 1e400, "kind": "user", "ts": 0, "data": {}}]  # json reads 1e400 as inf: not an id
    lines = [json.dumps(x) for x in good + BAD_LINES + tail[:1]] + ['{"id": 1e400, "kind": "user", "data": {}}']
    path.write_text("\n".join(lines) + "\n")
    log = SessionLog.load(path)
    assert [e.kind for e in log.events] == ["user", "assistant", "invalid", "invalid", "invalid", "invalid", "user"]
    assert [e.id for e in log.events] == list(range(7))  # ids stay positions: ranges after the bad lines still point right
    assert len(log.skipped) == 5 and sum(s.placeholder for s in log.skipped) == 4
    assert "to_id" in log.skipped[0].problem and "turn" in log.skipped[1].problem
    assert [it.user.text for it in view(log.events) if it.kind == "user"] == ["first", "last"]
    assert log.turn == 2


def test_view_ignores_placeholders(tmp_path: Path) -> None:
    path = tmp_path / "s4.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [
        {"id": 0, "kind": "user", "ts": 0, "data": {"text": "a", "turn": 1}},
        BAD_LINES[0] | {"id": 1},
        {"id": 2, "kind": "assistant", "ts": 0, "data": {"text": "b"}},
    ]) + "\n")
    items = view(SessionLog.load(path).events)
    assert [getattr(it, "kind", None) for it in items] == ["user", "assistant"]


def test_lone_surrogates_never_crash_the_log(tmp_path: Path) -> None:
    with SessionLog.create(tmp_path, "s5") as log:
        log.append(UserData(text="open caf\udce9.txt", turn=1))
        log.append(ToolResultData(call_id="c", name="list_files", content="caf\udce9.txt\n"))
    loaded = SessionLog.load(tmp_path / "s5.jsonl")
    assert loaded.skipped == [] and loaded.events[0].user.text.startswith("open caf")


def test_logs_are_created_private(tmp_path: Path) -> None:
    with SessionLog.create(tmp_path, "s6") as log:
        log.append(UserData(text="x", turn=1))
    assert stat.S_IMODE(os.stat(tmp_path / "s6.jsonl").st_mode) == 0o600


def test_a_second_writer_gets_a_clear_error_not_an_interleaved_log(tmp_path: Path) -> None:
    with SessionLog.create(tmp_path, "s7") as log:
        log.append(UserData(text="x", turn=1))
        # another process tries to append to the same session
        code = (
            "import sys; from pathlib import Path\n"
            "from ctxagent.context.history import SessionLog\n"
            "from ctxagent.context.errors import HistoryError\n"
            "from ctxagent.context.events import UserData\n"
            "log = SessionLog.load(Path(sys.argv[1]))\n"
            "try:\n    log.append(UserData(text='y', turn=2))\nexcept HistoryError as e:\n    print('REFUSED', e)\n"
        )
        out = subprocess.run([sys.executable, "-c", code, str(log.path)], capture_output=True, text=True, timeout=120)
        assert "REFUSED" in out.stdout and "in use by another ctxagent process" in out.stdout
        assert f"pid {os.getpid()}" in out.stdout
    assert len(SessionLog.load(tmp_path / "s7.jsonl").events) == 1
    # once closed, the lock is free again
    again = SessionLog.load(tmp_path / "s7.jsonl")
    again.append(UserData(text="y", turn=2))
    again.close()
    assert len(SessionLog.load(tmp_path / "s7.jsonl").events) == 2


def test_a_pending_log_reaches_the_disk_with_its_first_event_of_that_kind(tmp_path: Path) -> None:
    log = SessionLog(path=tmp_path / "s8.jsonl", session_id="s8", pending_until="user")
    log.append(SessionStartData(session="s8"))
    log.sync()  # nothing on disk yet, nothing to sync
    assert log.pending and not log.path.exists()
    log.append(UserData(text="第一条消息", turn=1))
    assert not log.pending and log.path.stat().st_mode & 0o777 == 0o600
    assert [e.kind for e in SessionLog.load(log.path).events] == ["session_start", "user"]
    log.append(AssistantData(text="ok"))
    log.close()
    log.append(AssistantData(text="after a close: appended, not created again"))
    log.close()
    assert [e.data.get("text") for e in SessionLog.load(log.path).events][2:] == [
        "ok", "after a close: appended, not created again"]
    # closed before its first user message: no file at all
    never = SessionLog(path=tmp_path / "s9.jsonl", session_id="s9", pending_until="user")
    never.append(SessionStartData(session="s9"))
    never.close()
    assert not never.path.exists() and never.events[0].kind == "session_start"


def test_reading_a_log_with_a_cut_last_line_leaves_its_bytes_alone(tmp_path: Path) -> None:
    """`load` is what report/inspect/doctor use while another process may still be writing: it never
    writes. The writer (`open`, under the lock) ends the cut line before its first append."""
    with SessionLog.create(tmp_path, "cut") as log:
        log.append(UserData(text="first", turn=1))
    path = tmp_path / "cut.jsonl"
    with path.open("ab") as fh:
        fh.write(b'{"v": 1, "id": 1, "type": "assist')  # a writer killed mid-line, or still writing
    before = path.read_bytes()
    loaded = SessionLog.load(path)
    assert loaded.skipped_lines == 1 and path.read_bytes() == before
    with SessionLog.open(path) as log:
        log.append(UserData(text="second", turn=2))
    again = SessionLog.load(path)
    assert [e.user.text for e in again.events if e.kind == "user"] == ["first", "second"]
