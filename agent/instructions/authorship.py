"""Who last wrote an instruction file (AGENTS.md / CLAUDE.md, the root's or a folder's): the agent or not.

The boundary is time, not the tool. A change made while the agent ran — any model tool call, any
program it started (`python -c`, a test run's `conftest.py`, a build script), a sub-agent, however it
wrote the file — is the agent's; a change made while it did not run (between turns, between sessions,
the user's own `!command`) is not. When the agent ran is read off the session logs (`agent_runs`): a
model step's tool calls run from their assistant event, logged before the first starts, to their last
result, logged after the last ends; calls a log leaves unanswered (a killed run) ran until the next
session of the repository started. When the file changed is its inode change time (`st_ctime`, of the
link and of the file it names): a program can set a file's modification time (`touch -d`, `os.utime`)
but not its change time, which the kernel sets to now on every write, rename, link or `utime`. The
file system's clock is checked against the wall clock the logs use (`fs_clock`: a network file system
may run ahead or behind, and some keep whole seconds).

This is read only when the file differs from its last load: `.ctxagent/instructions.json` keeps, per
file, the sha256 last loaded, who wrote it and the session that was told (the note stays in that
session's prompt; later sessions load the file as they would any other). A record only matches the file
it was made for, and a file the agent changes no longer matches it.

An edit the user makes while the agent's tools run (in an editor, during a long test run) counts as
the agent's: the notice asks them to look, and the file still loads. Not covered: a program that
outlives its call and writes later. Sandboxed commands cannot (their PID
namespace ends with them); with `--sandbox off`, or from a running MCP server, one can.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO

from ctxagent.context.errors import CtxagentError, ToolError
from ctxagent.context.floor.state_paths import project_state_dir, sessions_dir
from ctxagent.context.history import Event, SessionLog
from ctxagent.tools.atomic_write import write_atomic
from ctxagent.tools.confine import open_in_repo

INSTRUCTIONS_RECORD = "instructions.json"
# The kernel's file clock lags the wall clock by a tick at most; a file system that keeps whole
# seconds (FAT: even ones) is read with the coarser slack.
CLOCK_SLACK_S = 0.05
COARSE_SLACK_S = 2.0
# Of a log older than the change only a run left open at its end can hold it: its end is read.
LAST_LINE_BYTES = 16 * 1024
TAIL_BYTES = 1024 * 1024


@dataclass(frozen=True)
class AgentWritten:
    session: str
    turn: int
    first_load: bool  # the first load since that edit: the user is told now


@dataclass(frozen=True)
class Run:
    """A stretch of time in which the agent's tools ran: one model step's tool calls."""

    start: float
    end: float  # math.inf: the log ends before the calls were answered
    session: str
    turn: int


def agent_written(root: Path, name: str, text: str, log: SessionLog) -> AgentWritten | None:
    """Whether `name` (whose loaded text is `text`) last changed while the agent ran, and in which
    session; None when not (or when that cannot be read: a start never fails on this)."""
    record_path = project_state_dir(root) / INSTRUCTIONS_RECORD
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    try:
        record = json.loads(record_path.read_text(encoding="utf-8")) if record_path.is_file() else {}
    except (OSError, ValueError):
        record = {}
    files: dict[str, Any] = record["files"] if isinstance(record, dict) and isinstance(record.get("files"), dict) else {}
    entry = files.get(name) if isinstance(files.get(name), dict) else None
    if entry is not None and entry.get("sha256") == digest:
        writer = entry.get("writer")
        if isinstance(writer, dict) and entry.get("told") == log.session_id:
            return AgentWritten(str(writer.get("session", "")), int(writer.get("turn") or 0), first_load=False)
        return None
    found = last_agent_run(root, name, log)
    files[name] = {"sha256": digest, "writer": {"session": found.session, "turn": found.turn} if found else None,
                   "told": log.session_id if found else None}
    try:
        write_atomic(record_path, json.dumps({"version": 1, "files": files}, indent=1).encode())
    except OSError:
        pass  # not remembered: the next start says it again
    return AgentWritten(found.session, found.turn, first_load=True) if found else None


def last_agent_run(root: Path, name: str, log: SessionLog) -> Run | None:
    """The latest run of the agent's tools during which `name` last changed; None when it changed
    while the agent did not run."""
    changed = changed_at(root, name)
    if changed is None:
        return None
    offset, slack = fs_clock(project_state_dir(root))
    when = changed - offset  # on the logs' clock
    runs = agent_runs(log.events, log.session_id)
    others: list[Path] = []
    try:
        others = [p for p in sessions_dir(root).glob("*.jsonl") if p != log.path]
        for path in others:
            recent = path.stat().st_mtime >= changed - slack  # both on the file system's clock
            runs += agent_runs(_events(path) if recent else _tail_events(path), path.stem)
    except OSError:
        pass
    if any(math.isinf(r.end) for r in runs):
        starts = [_first_ts(p) for p in others] + [log.events[0].ts if log.events else time.time()]
        runs = [r if not math.isinf(r.end) else _ended_by(r, starts) for r in runs]
    held = [r for r in runs if r.start - slack <= when <= r.end + slack]
    return max(held, key=lambda r: r.start) if held else None


def agent_runs(events: Iterable[Event], session: str) -> list[Run]:
    """When the agent's tools ran in a log: each model step's calls, from their assistant event to
    their last result (the user's own `!command` / `@file` calls are `direct`: never a run). Calls
    left unanswered end at the next user message or session start, or (none) never: math.inf."""
    runs: list[Run] = []
    current: tuple[float, int, set[str]] | None = None
    for ev in events:
        try:
            if ev.kind == "assistant":
                data = ev.assistant
                if current is not None:
                    runs.append(Run(current[0], ev.ts, session, current[1]))
                current = (ev.ts, data.turn or 0, {c.id for c in data.tool_calls}) if data.tool_calls and not data.direct else None
            elif ev.kind == "tool_result" and current is not None:
                current[2].discard(ev.tool_result.call_id)
                if not current[2]:
                    runs.append(Run(current[0], ev.ts, session, current[1]))
                    current = None
            elif ev.kind in ("user", "session_start") and current is not None:
                runs.append(Run(current[0], ev.ts, session, current[1]))
                current = None
        except (CtxagentError, ValueError):
            continue  # an event this version cannot read says nothing about when tools ran
    if current is not None:
        runs.append(Run(current[0], math.inf, session, current[1]))
    return runs


def changed_at(root: Path, name: str) -> float | None:
    """When `name` last changed on the file system's clock: the later inode change time of the path
    and of the file it names (opened confined, as the loader reads it); None when it cannot be read."""
    try:
        fh, st, _rel = open_in_repo(root, name)
        fh.close()
        link = os.lstat(Path(root) / name)
    except (ToolError, OSError):
        return None
    return max(st.st_ctime, link.st_ctime)


@lru_cache(maxsize=8)
def fs_clock(state_dir: Path) -> tuple[float, float]:
    """(how far the file system's clock runs ahead of the wall clock, the slack to read it with),
    from a probe file made in `state_dir` (a random name, O_EXCL | O_NOFOLLOW, removed at once)."""
    probe = state_dir / f".clock-{secrets.token_hex(8)}"
    try:
        before = time.time()
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(probe)
        after = time.time()
    except OSError:
        return 0.0, CLOCK_SLACK_S
    slack = COARSE_SLACK_S if st.st_ctime_ns % 1_000_000_000 == 0 else CLOCK_SLACK_S
    ahead = 0.0 if before - slack <= st.st_ctime <= after + slack else st.st_ctime - (before + after) / 2
    return ahead, slack


def _ended_by(run: Run, starts: list[float]) -> Run:
    """A run a log left open ended, at the latest, when the next session of the repository started."""
    later = [s for s in starts if run.start < s < math.inf]
    return Run(run.start, min(later) if later else time.time(), run.session, run.turn)


def _events(path: Path) -> list[Event]:
    try:
        return list(SessionLog.load(path).events)
    except (CtxagentError, OSError):
        return []


def _tail_events(path: Path) -> list[Event]:
    """The events at the end of a log, where a run left open is: none when it ends as a turn does
    (a reply without tool calls: the last LAST_LINE_BYTES tell), else those in its last TAIL_BYTES."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            events = _read_tail(fh, size, LAST_LINE_BYTES)
            if events and events[-1].kind == "assistant" and not events[-1].data.get("tool_calls"):
                return []
            return _read_tail(fh, size, TAIL_BYTES)
    except OSError:
        return []


def _read_tail(fh: BinaryIO, size: int, length: int) -> list[Event]:
    fh.seek(max(0, size - length))
    lines = fh.read(length).split(b"\n")
    if size > length:
        lines = lines[1:]  # cut in the middle
    return [ev for line in lines if (ev := _event(line)) is not None]


def _first_ts(path: Path) -> float:
    """When a log's session started: its first event's time (math.inf when it cannot be read)."""
    try:
        with path.open("rb") as fh:
            ev = _event(fh.readline(TAIL_BYTES))
    except OSError:
        return math.inf
    return ev.ts if ev is not None else math.inf


def _event(line: bytes) -> Event | None:
    try:
        return Event.from_obj(json.loads(line))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
