"""`ctxagent report`'s sub-agent rows: each child's steps, tokens and cost, and the session total.

The children are found through the parent's log (each `task` result's meta names its child), so a
report reads only what this session started; a child whose log is gone is said, not skipped."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ctxagent.agent.providers.pricing import SessionCost, session_cost
from ctxagent.context.errors import HistoryError
from ctxagent.context.floor.state_paths import SUBAGENTS_FOLDER
from ctxagent.context.history import SessionLog
from ctxagent.context.request import Usage


@dataclass
class ChildRow:
    session: str
    description: str
    stop_reason: str
    steps: int
    cost: SessionCost | None  # None: its log could not be read


def open_child_log(log: SessionLog, session: str) -> SessionLog:
    """A sub-agent's log, next to its parent's (HistoryError when it is not there)."""
    return SessionLog.load(Path(log.path).parent / SUBAGENTS_FOLDER / f"{session}.jsonl")


def child_rows(log: SessionLog) -> list[ChildRow]:
    """The sub-agents the session's `task` results name, oldest first."""
    rows = []
    for ev in log.of_kind("tool_result"):
        sub = (ev.tool_result.meta.model_extra or {}).get("subagent")
        if not isinstance(sub, dict) or not isinstance(sub.get("session"), str):
            continue
        try:
            cost: SessionCost | None = session_cost(open_child_log(log, sub["session"]).events)
        except HistoryError:
            cost = None
        rows.append(ChildRow(sub["session"], str(sub.get("description") or ""), str(sub.get("stop_reason") or ""),
                             int(sub.get("steps") or 0), cost))
    return rows


def _tokens(u: Usage) -> str:
    return f"{u.prompt_tokens:,} in / {u.output_tokens:,} out"


def _dollars(cost: SessionCost) -> str:
    return f"${cost.total:.4f}" if cost.total is not None else "(no prices)"


def subagent_lines(log: SessionLog) -> list[str]:
    """One line per sub-agent, then the session's total with them; [] when it started none."""
    rows = child_rows(log)
    if not rows:
        return []
    own = session_cost(log.events)
    lines = [f"sub-agents: {len(rows)}"]
    usage, dollars, priced = own.usage, own.total or 0.0, own.total is not None
    for r in rows:
        if r.cost is None:
            lines.append(f"  {r.session} {r.description!r}: its log is missing")
            continue
        lines.append(f"  {r.session} {r.description!r}: {r.steps} step(s), {r.stop_reason}, "
                     f"{_tokens(r.cost.usage)}, {_dollars(r.cost)}")
        usage = usage + r.cost.usage
        if r.cost.total is not None:
            dollars, priced = dollars + r.cost.total, True
    lines.append(f"session total with sub-agents: {_tokens(usage)}, " + (f"${dollars:.4f}" if priced else "(no prices)"))
    return lines
