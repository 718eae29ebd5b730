"""Reading transcripts as they are on a user's disk: torn, growing, newer, malformed — counted, never fatal."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from ctxagent.tui.lab.bench.readers.claude import TORN, parse_claude_code, read_transcript
from ctxagent.tui.lab.replay.projects import SessionFile
from ctxagent.tui.lab.replay.sessions import kind_of, parse_since, read_all, read_session

from .conftest import BENCH, NEWER_RECORDS, needs_bench, newer_copy, torn_copy


def _assistant(mid: str, text: str, tokens: int, when: str) -> str:
    return json.dumps({"type": "assistant", "timestamp": when,
                       "message": {"id": mid, "model": "claude-opus-4-6", "role": "assistant",
                                   "content": [{"type": "text", "text": text}], "usage": {"input_tokens": tokens}}})


def _user(text: str) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": text}})


def test_a_torn_last_line_is_counted_and_the_rest_is_read(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    whole = [_user("fix the bug"), _assistant("m1", "on it", 100, "2026-03-01T10:00:00Z")]
    torn = _assistant("m2", "half of this", 200, "2026-03-01T10:01:00Z")
    f.write_text("\n".join(whole) + "\n" + torn[: len(torn) // 2], encoding="utf-8")
    lines, was_torn = read_transcript(f)
    assert was_torn and lines == whole
    session = read_session(SessionFile(f, "p", "s"))
    assert len(session.traj.calls) == 1 and session.traj.skipped[TORN] == 1
    assert "bad_json_line" not in " ".join(session.traj.skipped)  # the torn line is not called malformed


def test_a_growing_transcript_is_read_as_one_snapshot(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    head = _assistant("m2", "second", 200, "2026-03-01T10:01:00Z")
    f.write_text(_user("go") + "\n" + _assistant("m1", "first", 100, "2026-03-01T10:00:00Z") + "\n" + head[:40],
                 encoding="utf-8")
    first, torn = read_transcript(f)
    with open(f, "a", encoding="utf-8") as fh:  # Claude Code finishes the line and goes on
        fh.write(head[40:] + "\n" + _user("and now?") + "\n")
    again, torn_again = read_transcript(f)
    assert torn and len(first) == 2
    assert not torn_again and again[:2] == first and len(again) == 4
    assert len(parse_claude_code(again).calls) == 2


def test_a_last_line_without_its_newline_that_parses_is_kept(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text(_user("go") + "\n" + _assistant("m1", "done", 100, "2026-03-01T10:00:00Z"), encoding="utf-8")
    lines, torn = read_transcript(f)
    assert not torn and len(lines) == 2


def test_records_of_shapes_a_newer_version_writes_are_skipped_and_counted() -> None:
    lines = [_user("hello"), *(json.dumps(r) for r in NEWER_RECORDS), "{torn", "[1, 2]",
             _assistant("m9", "a known record after them", 50, "2026-03-01T10:05:00Z")]
    traj = parse_claude_code(lines)
    sk = traj.skipped
    assert sk["claude-code:record:ai-title"] == 1 and sk["claude-code:record:worktree-state"] == 1
    assert sk["claude-code:bad_json_line"] == 1 and sk["claude-code:bad_record"] == 1
    assert sk["claude-code:assistant_block:server_tool_use"] == 1
    # usage as a list, counts as strings and objects: read as what can be read, never a crash
    reported = [c.reported for c in traj.calls]
    assert reported == [None, 1200, 50]
    assert [e.data["text"] for e in traj.events if e.kind == "assistant"] == ["Still answered.", "Counted.",
                                                                             "a known record after them"]


def test_a_record_that_breaks_the_reader_midway_is_dropped_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """The boundary, not the case: whatever a record makes the reader trip on, what it half-added is undone."""
    from ctxagent.tui.lab.bench.readers import claude

    real = claude._assistant

    def trips(traj, msg, by_msg_id, tool_names, when=None):  # type: ignore[no-untyped-def]
        real(traj, msg, by_msg_id, tool_names, when)
        if msg.get("id") == "m-odd":
            raise TypeError("a shape nobody foresaw")

    monkeypatch.setattr(claude, "_assistant", trips)
    traj = parse_claude_code([_user("go"), _assistant("m-odd", "half", 10, "2026-03-01T10:00:00Z"),
                              _assistant("m-odd", "its second part", 10, "2026-03-01T10:00:01Z"),
                              _assistant("m1", "fine", 20, "2026-03-01T10:00:02Z")])
    assert [c.reported for c in traj.calls] == [20] and traj.calls[0].position == len(traj.events) - 1
    assert traj.skipped["claude-code:bad_assistant_record"] == 2
    assert [e.data["text"] for e in traj.events if e.kind == "assistant"] == ["fine"]


def test_unknown_kinds_are_named_in_plain_words() -> None:
    assert kind_of("claude-code:record:ai-title") == "unknown entry type 'ai-title'"
    assert kind_of(TORN).startswith("torn last line")
    assert kind_of("claude-code:bad_json_line").startswith("malformed")
    assert kind_of("claude-code:assistant_block:server_tool_use") == "unknown content block 'server_tool_use'"


def test_since_takes_dates_date_times_and_days_ago() -> None:
    now = dt.datetime(2026, 3, 10, 12, 0, tzinfo=dt.UTC)
    assert parse_since("7d", now) == (now - dt.timedelta(days=7)).timestamp()
    assert parse_since("2w", now) == (now - dt.timedelta(days=14)).timestamp()
    assert parse_since("2026-03-01T00:00:00Z") == dt.datetime(2026, 3, 1, tzinfo=dt.UTC).timestamp()
    assert parse_since("2026-03-01") == dt.datetime(2026, 3, 1).astimezone().timestamp()
    with pytest.raises(ValueError, match="--since"):
        parse_since("last tuesday")


def test_a_subagent_goes_with_its_session_under_since(tmp_path: Path) -> None:
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_text(_user("a") + "\n" + _assistant("m1", "x", 10, "2026-01-01T10:00:00Z") + "\n", encoding="utf-8")
    new.write_text(_user("b") + "\n" + _assistant("m2", "y", 10, "2026-03-05T10:00:00Z") + "\n", encoding="utf-8")
    sub = tmp_path / "old" / "subagents" / "agent-1.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_text(json.dumps({"type": "user", "isSidechain": True, "message": {"role": "user", "content": "sub"}})
                   + "\n" + _assistant("m3", "z", 10, "2026-03-06T10:00:00Z").replace('"type": "assistant"',
                                                                                       '"isSidechain": true, "type": "assistant"')
                   + "\n", encoding="utf-8")
    files = [SessionFile(old, "p", "old"), SessionFile(sub, "p", "agent-1", "old"), SessionFile(new, "p", "new")]
    since = dt.datetime(2026, 3, 1, tzinfo=dt.UTC).timestamp()
    assert [s.file.session for s in read_all(files).sessions] == ["old", "new", "agent-1"]  # by first call
    assert [s.file.session for s in read_all(files, since).sessions] == ["new"]  # its session is older


@needs_bench
def test_the_bench_sessions_read_truncated_and_with_newer_records(tmp_path: Path) -> None:
    plain = read_session(SessionFile(BENCH / "tool_heavy.jsonl", "p", "tool_heavy"))
    kept = torn_copy(BENCH / "tool_heavy.jsonl", tmp_path / "torn.jsonl")
    torn = read_session(SessionFile(tmp_path / "torn.jsonl", "p", "torn"))
    assert torn.traj.skipped[TORN] == 1 and kept > 0
    assert 0 < len(torn.traj.calls) < len(plain.traj.calls) + 1
    newer_copy(BENCH / "short.jsonl", tmp_path / "newer.jsonl")
    base = read_session(SessionFile(BENCH / "short.jsonl", "p", "short"))
    newer = read_session(SessionFile(tmp_path / "newer.jsonl", "p", "newer"))
    # the known records read as before, plus the two new assistant records
    assert [c.reported for c in newer.traj.calls if c.reported and c.reported != 1200] == \
        [c.reported for c in base.traj.calls if c.reported]
    assert newer.traj.skipped["claude-code:record:ai-title"] == 1
