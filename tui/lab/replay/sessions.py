"""Reading the user's transcripts into trajectories: tolerant, counted, and never fatal.

Each transcript is read as a snapshot up to its last complete line (a session still being written
keeps growing; its torn last line is counted, not read), parsed by the bench's Claude Code reader
(tui/lab/bench/readers/claude.py), and kept when it has model calls. What the reader skipped is
sorted into what Claude Code writes and the replay has no use for (`progress` records, thinking
blocks …, counted but not worth a word) and what it could not read: malformed lines, a torn last
line, and entry types or blocks it does not know (a newer Claude Code), which the summary names.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field

from ctxagent.tui.lab.bench.readers import Trajectory
from ctxagent.tui.lab.bench.readers.claude import (
    TORN,
    attach_compaction_usage,
    parse_claude_code,
    read_transcript,
)
from ctxagent.tui.lab.replay.projects import SessionFile

# what Claude Code writes on purpose and the replay does not need: counted, not reported as a problem
BY_DESIGN = ("claude-code:record:progress", "claude-code:record:file-history-snapshot",
             "claude-code:record:queue-operation", "claude-code:record:summary", "claude-code:split_record_merged",
             "claude-code:thinking_block", "claude-code:synthetic_message", "claude-code:sidechain",
             "claude-code:system:", "claude-code:image_block", "claude-code:orphan_tool_result")
MALFORMED = ("claude-code:bad_json_line", "claude-code:bad_record", "claude-code:no_message",
             "claude-code:user_content", "claude-code:bad_")


@dataclass
class Session:
    file: SessionFile
    traj: Trajectory
    started: float | None  # the first call's time (epoch seconds), else None
    ended: float | None  # the last call's time, else the file's modification time

    @property
    def is_subagent(self) -> bool:
        return self.file.parent is not None


@dataclass
class ReadReport:
    sessions: list[Session] = field(default_factory=list)
    no_calls: int = 0  # transcripts without a model call (nothing to replay)
    unreadable: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)  # the reader's counts, over every transcript

    def problems(self) -> dict[str, int]:
        """What could not be read: malformed lines and records, torn last lines, unknown entry types."""
        return {k: v for k, v in sorted(self.skipped.items()) if not k.startswith(BY_DESIGN)}

    def by_design(self) -> int:
        return sum(v for k, v in self.skipped.items() if k.startswith(BY_DESIGN))


def kind_of(key: str) -> str:
    """A skip counter's plain meaning."""
    if key == TORN:
        return "torn last line (a session still being written)"
    if key.startswith(MALFORMED):
        return f"malformed ({key.removeprefix('claude-code:')})"
    if key.startswith("claude-code:record:"):
        return f"unknown entry type {key.removeprefix('claude-code:record:')!r}"
    if key.startswith("claude-code:assistant_block:") or key.startswith("claude-code:block:"):
        return f"unknown content block {key.rsplit(':', 1)[1]!r}"
    return key.removeprefix("claude-code:")


def read_session(file: SessionFile) -> Session:
    """One transcript as a session (perhaps with no model call). Raises OSError if it cannot be read."""
    lines, torn = read_transcript(file.path)
    traj = parse_claude_code(lines, run_id=file.label, sidechain=file.parent is not None)
    if torn:
        traj.skipped[TORN] += 1
    if file.parent is None:
        attach_compaction_usage(traj, file.path.parent / file.path.stem / "subagents")
    times = [c.time for c in traj.calls if c.time is not None]
    ended = max(times) if times else file.path.stat().st_mtime
    return Session(file, traj, min(times) if times else None, ended)


def read_all(files: list[SessionFile], since: float | None = None, progress: object = None) -> ReadReport:
    """Every transcript with model calls (active since `since`), in the order of their first call: the
    calibrator learns in that order. A subagent goes with its session: kept when its session is."""
    report = ReadReport()
    read: list[Session] = []
    for f in files:
        try:
            session = read_session(f)
        except OSError as exc:
            report.unreadable.append(f"{f.path}: {exc.strerror or exc}")
        else:
            report.skipped.update(session.traj.skipped)
            if session.traj.calls:
                read.append(session)
            else:
                report.no_calls += 1
        if progress is not None and hasattr(progress, "advance"):
            progress.advance(1, note=f.session[:40])

    def recent(s: Session) -> bool:
        return since is None or (s.ended or 0.0) >= since

    mains = {s.file.session: recent(s) for s in read if not s.is_subagent}
    for s in read:
        parent = s.file.parent
        if mains[s.file.session] if parent is None else mains.get(parent, recent(s)):
            report.sessions.append(s)
    report.sessions.sort(key=lambda s: (s.started if s.started is not None else s.ended or 0.0))
    return report


def parse_since(text: str, now: dt.datetime | None = None) -> float:
    """`--since`: an ISO date or date-time (local time unless it says), or `N` days / weeks ago (`7d`, `2w`)."""
    text = text.strip()
    now = now or dt.datetime.now().astimezone()
    if text[:-1].isdigit() and text[-1:] in ("d", "w"):
        days = int(text[:-1]) * (7 if text.endswith("w") else 1)
        return (now - dt.timedelta(days=days)).timestamp()
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--since wants a date (2026-03-01), a date-time, or 7d / 2w, not {text!r}") from None
    if when.tzinfo is None:
        when = when.astimezone()
    return when.timestamp()
