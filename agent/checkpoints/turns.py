"""The /rewind picker's view of a session: user turns with time, first line, files and diffstat.

A turn's own changes are the diff from its pre-turn snapshot to the tree the agent left at the
turn's end (its post snapshot); without one, to the next turn's snapshot, else the current tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxagent.agent.checkpoints.shadow_git import ShadowRepo
from ctxagent.context.history import SessionLog, hidden_by_rewinds


@dataclass(frozen=True)
class FileStat:
    path: str
    status: str  # "A" added, "M" modified, "D" deleted, "T" type or mode changed
    added: int | None = None  # None for binary files
    deleted: int | None = None


@dataclass(frozen=True)
class TurnInfo:
    """One user turn as the /rewind picker shows it."""

    turn: int
    event_id: int  # id of the turn's user event: the conversation rewinds to it
    time: float
    first_line: str
    checkpoint: str | None  # snapshot a code rewind to this turn restores (None: nothing to restore)
    own_checkpoint: bool  # True when the agent changed files in this very turn
    files_changed: list[str] = field(default_factory=list)
    diffstat: list[FileStat] = field(default_factory=list)
    visible: bool = True  # False for turns hidden by an earlier conversation rewind

    @property
    def insertions(self) -> int:
        return sum(s.added or 0 for s in self.diffstat)

    @property
    def deletions(self) -> int:
        return sum(s.deleted or 0 for s in self.diffstat)

    def diffstat_summary(self) -> str:
        if not self.files_changed:
            return "no file changes"
        n = len(self.files_changed)
        changed = f"{n} file{'s' if n != 1 else ''} changed"
        return f"{changed}, +{self.insertions} -{self.deletions}" if self.diffstat else changed  # no diffstat: from the log alone


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def diffstat(shadow: ShadowRepo, old: str, new: str) -> list[FileStat]:
    a, b = shadow.tree_entries(old), shadow.tree_entries(new)
    numbers = shadow.numstat(old, new)
    stats: list[FileStat] = []
    for path in sorted(set(a) | set(b)):
        if a.get(path) == b.get(path):
            continue
        status = "A" if path not in a else "D" if path not in b else "M" if a[path].mode == b[path].mode else "T"
        added, deleted = numbers.get(path, (0, 0))
        stats.append(FileStat(path, status, added, deleted))
    return stats


def list_turns(shadow: ShadowRepo, log: SessionLog, positions: list[tuple[int, str]],
               posts: dict[str, tuple[str, list[str]]], include_hidden: bool = False) -> list[TurnInfo]:
    """Turns oldest first. `positions`: (log position, pre-turn commit), sorted; `posts`: pre -> (post, files)."""
    hidden = hidden_by_rewinds(log.events)
    users = [e for e in log.events if e.kind == "user"]
    current: str | None = None
    infos: list[TurnInfo] = []
    for i, u in enumerate(users):
        if u.id in hidden and not include_hidden:
            continue
        next_id = users[i + 1].id if i + 1 < len(users) else 1 << 62
        target = next((c for p, c in positions if p >= u.id), None)
        own = next((c for p, c in positions if u.id <= p < next_id), None)
        files: list[str] = []
        stats: list[FileStat] = []
        if own is not None:
            reported: list[str] = []
            if own in posts:
                end, reported = posts[own]
            else:
                later = next((c for p, c in positions if p >= next_id), None)
                if later is None:
                    current = current or shadow.scan()
                    later = current
                end = later
            stats = diffstat(shadow, own, end)
            files = sorted({s.path for s in stats} | set(reported))
        infos.append(TurnInfo(
            turn=u.user.turn, event_id=u.id, time=u.ts,
            first_line=first_line(u.user.text), checkpoint=target,
            own_checkpoint=own is not None, files_changed=files, diffstat=stats,
            visible=u.id not in hidden,
        ))
    return infos
