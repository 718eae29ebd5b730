"""Attacks on the session log, through the real CLI: lines with wrong fields, a second process on
the same session, and text that cannot be encoded. Nothing crashes, nothing is lost, every problem
is said."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from pathlib import Path

from attack_helpers import BIN, OPENAI_KEY, headless, no_traceback, run_cli


def _session(repo: Path, servers, prompt: str = "first task") -> Path:  # noqa: ANN001
    srv = servers([{"text": "done"}])
    out = headless(repo, srv.base_url, prompt, "--yes")
    assert out.returncode == 0, out.stderr
    (log,) = (repo / ".ctxagent" / "sessions").glob("*.jsonl")
    return log


BAD_LINES = [
    {"kind": "rewind", "data": {}},  # no to_id
    {"kind": "user", "data": {"text": "hi", "turn": "x"}},  # the turn is not a number
    {"kind": "assistant", "data": {"text": "", "tool_calls": [{"name": "read_file", "arguments": {}}]}},  # call without id
    {"kind": "compaction", "data": {"first_id": "a", "last_id": 1}},
    {"kind": "tool_result", "data": {"content": 5}},  # no call id, content not text
]


def test_lines_with_wrong_fields_are_reported_and_the_session_continues(repo: Path, servers) -> None:  # noqa: ANN001
    log = _session(repo, servers)
    n = len(log.read_text().splitlines())
    with log.open("a", encoding="utf-8") as fh:
        for i, bad in enumerate(BAD_LINES):
            fh.write(json.dumps({"id": n + i, "ts": 0, **bad}) + "\n")
        fh.write('{"id": 1e400, "kind": "user", "data": {}}\n')  # an id json reads as infinity
    doctor = run_cli(repo, "doctor")
    no_traceback(doctor)
    assert "6 log lines could not be used" in doctor.stdout and "5 with wrong fields kept" in doctor.stdout
    assert "to_id" in doctor.stdout and "turn" in doctor.stdout  # which field was wrong, said
    srv = servers([{"text": "continued fine"}])
    again = headless(repo, srv.base_url, "second task", "--continue", "--yes")
    no_traceback(again)
    assert again.returncode == 0 and "continued fine" in again.stdout
    assert "second task" in json.dumps(srv.requests[-1])  # the continued session reached the model
    assert "first task" in json.dumps(srv.requests[-1])  # … with what came before the bad lines
    report = run_cli(repo, "report", "--last")
    no_traceback(report)
    assert report.returncode == 0


def test_a_second_process_on_the_same_session_gets_a_clear_error(repo: Path, servers) -> None:  # noqa: ANN001
    log = _session(repo, servers)
    holder = subprocess.Popen(  # another ctxagent process with the session open for writing
        [str(BIN).replace("ctxagent", "python"), "-c",
         "import sys, time; from pathlib import Path; from ctxagent.context.history import SessionLog\n"
         "log = SessionLog.load(Path(sys.argv[1])); log.lock(); print('locked', flush=True); time.sleep(60)",
         str(log)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        before = log.read_bytes()
        srv = servers([{"text": "should not run"}])
        out = headless(repo, srv.base_url, "race", "--continue", "--yes")
        no_traceback(out)
        assert out.returncode != 0 and "in use by another ctxagent process" in out.stderr
        assert f"pid {holder.pid}" in out.stderr
        assert log.read_bytes() == before and srv.requests == []  # nothing interleaved, nothing sent
    finally:
        holder.kill()
        holder.wait()


def test_undecodable_text_never_crashes_the_log(repo: Path, servers) -> None:  # noqa: ANN001
    (repo / "caf\xe9.txt".encode("latin-1").decode("utf-8", "surrogateescape")).write_text("x")
    srv = servers([{"tool_calls": [{"name": "list_files", "arguments": {}}]},
                   {"text": "broken \udce9 text from the model"}])
    out = headless(repo, srv.base_url, "list the files", "--yes")
    no_traceback(out)
    assert out.returncode == 0
    (log,) = (repo / ".ctxagent" / "sessions").glob("*.jsonl")
    doctor = run_cli(repo, "doctor")
    assert "no torn lines" in doctor.stdout or "log integrity" in doctor.stdout
    assert all(json.loads(line) for line in log.read_text(encoding="utf-8").splitlines())
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600  # the log holds the user's code: private


def test_sessions_are_private_files(repo: Path, servers) -> None:  # noqa: ANN001
    log = _session(repo, servers)
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600
    assert time.time() - log.stat().st_mtime < 600
    assert OPENAI_KEY not in log.read_text()
