"""Trajectory readers: four real agent-log formats into one provider-neutral event stream.

Every reader yields `Trajectory` objects whose events use the data shapes of the session log
(context/history.py): user {text, turn}, assistant {text, tool_calls: [{id, name, arguments}],
usage}, tool_result {call_id, name, content, is_error, meta}, plus `source_compaction` {summary,
pre_tokens} where the original agent compacted its own context (Claude Code). Each assistant event
is the output of one model call of the original run; `Trajectory.calls` lists them with the prompt
tokens the provider reported for that call, when the source has them.

Readers are tolerant: a record they cannot use is skipped and counted in `Trajectory.skipped`
(and a whole unreadable file in the `ReadResult.skipped` of `read_source`), never fatal.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SOURCES = ("claude-code", "mini-swe-agent", "swe-agent", "openhands")


@dataclass
class SourceEvent:
    kind: str  # "user" | "assistant" | "tool_result" | "source_compaction"
    data: dict[str, Any]


@dataclass
class Call:
    """One model call of the original run: its prompt is `events[:position]`."""

    position: int  # index in Trajectory.events of the assistant event this call produced
    reported: int | None = None  # prompt tokens the provider reported (None: the source has none)
    cached: int | None = None  # of which served from the provider's prompt cache, when reported
    cache_write: int | None = None  # of which written to the prompt cache (Anthropic's cache_creation)
    time: float | None = None  # when the call was made (epoch seconds), when the source records it
    model: str | None = None  # the model that answered, when the source records it (else the source's default)
    cache_write_1h: int | None = None  # of `cache_write`, the tokens written with the 1-hour TTL (Anthropic)


@dataclass
class Trajectory:
    source: str
    run_id: str
    system: str = ""
    events: list[SourceEvent] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)

    # -- helpers the readers share -------------------------------------------------------------
    @property
    def turn(self) -> int:
        return sum(1 for e in self.events if e.kind == "user")

    def add_user(self, text: str) -> None:
        self.events.append(SourceEvent("user", {"text": text, "turn": self.turn + 1}))

    def add_assistant(self, text: str, tool_calls: list[dict[str, Any]], reported: int | None,
                      cached: int | None = None, cache_write: int | None = None,
                      time: float | None = None, model: str | None = None,
                      cache_write_1h: int | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {"text": text, "tool_calls": tool_calls, "stop_reason": None,
                                "usage": {"input_tokens": reported} if reported is not None else {},
                                "step": len(self.calls) + 1}
        self.calls.append(Call(len(self.events), reported, cached, cache_write, time, model, cache_write_1h))
        self.events.append(SourceEvent("assistant", data))
        return data

    def add_tool_result(self, call_id: str, name: str, content: str, is_error: bool = False) -> None:
        self.events.append(SourceEvent("tool_result", {"call_id": call_id, "name": name, "content": content,
                                                       "is_error": is_error, "duration_ms": 0, "meta": {}}))

    @property
    def first_compaction_position(self) -> int | None:
        for i, e in enumerate(self.events):
            if e.kind == "source_compaction":
                return i
        return None


@dataclass
class ReadResult:
    trajectories: list[Trajectory]
    skipped: Counter[str]  # per-source skips summed over trajectories, plus unreadable files


def repo_root() -> Path:
    return Path(__file__).resolve().parents[3]


def default_data_dir() -> Path:
    env = os.environ.get("CTXAGENT_BENCH_DATA")
    if env:
        return Path(env)
    return (repo_root().parent / "shared" / "bench").resolve()


def source_path(source: str, data: Path | str | None) -> Path:
    """Where a source's files are: `data` may be the bench root, the source folder, or one file."""
    base = Path(data) if data else default_data_dir()
    if (base / source).exists():
        return base / source
    return base


def read_source(source: str, data: Path | str | None = None, limit: int | None = None) -> ReadResult:
    """Read the trajectories of `source` (one of SOURCES); with `limit`, a stable sample of K of them
    spread over repositories (`stable_sample`), kept in file order."""
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}; choose one of {', '.join(SOURCES)}")
    path = source_path(source, data)
    if not path.exists():
        raise FileNotFoundError(f"no benchmark data for {source} at {path} (set --data or CTXAGENT_BENCH_DATA)")
    it = _iter_source(source, path)
    skipped: Counter[str] = Counter()
    out: list[Trajectory] = []
    for item in it:
        if isinstance(item, str):  # an unreadable file or line, named by the reader
            skipped[item] += 1
            continue
        out.append(item)
    if limit is not None:
        out = stable_sample(out, limit)
    for traj in out:
        skipped.update(traj.skipped)
    return ReadResult(out, skipped)


# `owner__repo-1234` (SWE-bench instance ids, also inside SWE-agent's run names; GitHub owners have no dots)
_INSTANCE = re.compile(r"(?<![A-Za-z0-9.-])([A-Za-z][A-Za-z0-9-]*)__([A-Za-z0-9.-]+?(?:_[A-Za-z0-9.-]+?)*)-\d+(?![\d.])")


def repository_of(run_id: str) -> str:
    """The repository a run worked on: `owner/repo` of a SWE-bench instance id, else the folder of the run's
    file (a path-like id), else the id itself."""
    m = _INSTANCE.search(run_id)
    if m:
        return f"{m.group(1)}/{m.group(2)}"
    return run_id.rsplit("/", 1)[0]


def _rank(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def stable_sample(trajectories: Sequence[Trajectory], k: int) -> list[Trajectory]:
    """K trajectories chosen by hash, never by file order: repositories take turns (in the order of their
    names' hashes), and each gives its runs in the order of their ids' hashes. The same K and data give the
    same sample on every machine, K ≥ the number of repositories covers every one, and a larger K keeps
    the runs a smaller one chose. Returned in file order (the calibrator is fed calls in that order)."""
    if k >= len(trajectories):
        return list(trajectories)
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(trajectories):
        groups.setdefault(repository_of(t.run_id), []).append(i)
    queues = [sorted(idx, key=lambda i: (_rank(trajectories[i].run_id), i)) for _, idx in
              sorted(groups.items(), key=lambda kv: (_rank(kv[0]), kv[0]))]
    chosen: list[int] = []
    depth = 0
    while len(chosen) < max(k, 0):
        for q in queues:
            if depth < len(q) and len(chosen) < k:
                chosen.append(q[depth])
        depth += 1
    return [trajectories[i] for i in sorted(chosen)]


def _iter_source(source: str, path: Path) -> Iterator[Trajectory | str]:
    if source == "claude-code":
        from ctxagent.tui.lab.bench.readers.claude import iter_claude_code

        return iter_claude_code(path)
    if source == "mini-swe-agent":
        from ctxagent.tui.lab.bench.readers.swe import iter_mini_swe_agent

        return iter_mini_swe_agent(path)
    if source == "swe-agent":
        from ctxagent.tui.lab.bench.readers.swe import iter_swe_agent

        return iter_swe_agent(path)
    from ctxagent.tui.lab.bench.readers.openhands import iter_openhands

    return iter_openhands(path)


def block_text(content: Any, skipped: Counter[str], where: str) -> str:
    """Text of a string or a list of content blocks (Anthropic / OpenAI shapes); images become a marker."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for b in content:
            if isinstance(b, str):
                parts.append(b)
            elif isinstance(b, dict):
                t = b.get("type")
                if t == "text" or "text" in b:
                    parts.append(str(b.get("text", "")))
                elif t in ("image", "image_url"):
                    skipped[f"{where}:image_block"] += 1
                    parts.append("[image]")
                else:
                    skipped[f"{where}:block:{t}"] += 1
        return "\n".join(parts)
    if isinstance(content, dict):
        return block_text([content], skipped, where)
    return str(content)
