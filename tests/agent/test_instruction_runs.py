"""When the agent's tools ran, read off a log (agent/instructions/authorship.py `agent_runs`), and the
file-system clock check: the pieces the instruction-file authorship boundary stands on."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

from ctxagent.agent.instructions.authorship import Run, agent_runs, changed_at, fs_clock
from ctxagent.context.history import Event


def _ev(i: int, kind: str, ts: float, **data: Any) -> Event:
    return Event(id=i, kind=kind, data=data, ts=ts)


def _call(cid: str) -> dict[str, Any]:
    return {"id": cid, "name": "shell", "arguments": {"command": "true"}}


def test_a_model_steps_calls_run_from_their_assistant_event_to_their_last_result() -> None:
    events = [
        _ev(0, "session_start", 1.0, session="s"),
        _ev(1, "user", 2.0, text="go", turn=1),
        _ev(2, "assistant", 3.0, tool_calls=[_call("a"), _call("b")], turn=1),
        _ev(3, "tool_result", 4.0, call_id="a"),
        _ev(4, "tool_result", 5.0, call_id="b"),
        _ev(5, "assistant", 6.0, text="done", turn=1),
    ]
    assert agent_runs(events, "s") == [Run(3.0, 5.0, "s", 1)]


def test_the_users_own_calls_are_no_run_and_an_unanswered_call_runs_on() -> None:
    events = [
        _ev(0, "user", 1.0, text="!make", turn=1),
        _ev(1, "assistant", 1.5, tool_calls=[_call("direct-1")], turn=1, direct=True),  # the user's !command
        _ev(2, "tool_result", 2.0, call_id="direct-1"),
        _ev(3, "user", 3.0, text="go", turn=2),
        _ev(4, "assistant", 4.0, tool_calls=[_call("c")], turn=2),  # killed before its result
        _ev(5, "user", 9.0, text="again", turn=3),  # a resume: the run ended by then at the latest
        _ev(6, "assistant", 10.0, tool_calls=[_call("d")], turn=3),  # killed again, and the log ends
    ]
    assert agent_runs(events, "s") == [Run(4.0, 9.0, "s", 2), Run(10.0, math.inf, "s", 3)]


def test_an_event_that_cannot_be_read_is_skipped() -> None:
    events = [_ev(0, "assistant", 1.0, tool_calls="not a list"), _ev(1, "assistant", 2.0, tool_calls=[_call("x")], turn=1),
              _ev(2, "tool_result", 3.0, call_id="x")]
    assert agent_runs(events, "s") == [Run(2.0, 3.0, "s", 1)]


def test_the_change_time_is_the_one_a_program_cannot_set(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("rules\n")
    before = time.time()
    os.utime(tmp_path / "AGENTS.md", (before - 3600, before - 3600))  # the modification time, set back an hour
    offset, slack = fs_clock(tmp_path)
    changed = changed_at(tmp_path, "AGENTS.md")
    assert changed is not None and changed - offset >= before - slack  # the change time moved with utime
    assert abs(offset) < 1 and slack > 0  # a local file system keeps the wall clock
    assert changed_at(tmp_path, "missing.md") is None and not list(tmp_path.glob(".clock-*"))  # the probe is gone
