"""The model sees its budget (issue 21): `context_status`, `compact_context` and `handoff`.

context_status: the window as the last build left it — usage against the window in provider tokens
(calibrated: the one unit the user's gauge and the model read), the slices, what was spilled, cut or
compacted and the handle that brings each back (read_spill / read_event), and the prompt cache's
state (warm or cold, and since when; the builder's cold-start rule: context/builder/cache.py
ColdTrail). Cheap and read-only: it reads the agent's last report and the log, and never builds.

compact_context(focus): the model asks for a compaction before its next step. The agent runs it on
the path /compact takes (Agent.compact): non-destructive (a summary event; the originals stay in the
log, read_event shows them), and shown to the user (a notice and the compaction panel).

handoff(goal): the model drafts a new session's opening message (agent/session_ops.py handoff_draft);
the user edits and confirms it in the app (nothing starts without them); headless prints it.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from ctxagent.context.history import SessionLog
from ctxagent.context.monitor import usage_text
from ctxagent.context.report import SLICES
from ctxagent.tools.contract import BudgetStatus, FunctionTool, Tool, ToolArgs, ToolContext, ToolResult
from pydantic import Field

MAX_HANDLES = 20  # per kind of cut listed; the rest are counted
MAX_FOCUS_CHARS = 500


class ContextStatusArgs(ToolArgs):
    pass


class CompactContextArgs(ToolArgs):
    focus: str | None = Field(None, description="What the summary must keep in detail (e.g. the failing test and "
                                                "the files involved). Optional.")


STATUS_DESCRIPTION = (
    "Show your context window: tokens used against the window (provider tokens), per slice, what was "
    "spilled, pruned or compacted and the handle that brings each back, and whether the prompt cache is "
    "warm. Read-only and cheap; use it before deciding to compact or to hand off."
)
COMPACT_DESCRIPTION = (
    "Ask for the context to be compacted before your next step: the oldest turns become a summary "
    "(the originals stay in the session log; read_event shows them). Give a focus to say what the summary "
    "must keep. The user sees it."
)


def _now() -> float:
    return time.time()  # the clock: one seam, so a test can stand an hour later


def _n(x: float) -> str:
    return f"{round(x):,}"


def _clock(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def status_text(status: BudgetStatus, log: SessionLog | None, now: float) -> str:
    report = status.report
    if report is None:
        return "No request has been built yet in this session: nothing to report."
    ratio = report.calibration_ratio or 1.0
    reserve = report.used.get("reserve", 0)
    lines = [
        f"Context: {_n(report.calibrated_total)} of {_n(report.window)} tokens ({usage_text(report.usage_pct)} of the window "
        f"with the {_n(reserve * ratio)}-token reply reserve); provider tokens, the local count calibrated ×{ratio:.2f}. "
        f"Step {report.step}, turn {report.turn}; advice: {report.advice}.",
        "Slices (used / budget): " + "; ".join(
            f"{s} {_n(report.used.get(s, 0) * ratio)} / {_n(report.budget.get(s, 0) * ratio)}" for s in SLICES),
    ]
    lines += _cuts(status, log)
    lines.append(_cache(status, log, now))
    if status.compaction_requested is not None:
        focus = f" (focus: {status.compaction_requested})" if status.compaction_requested else ""
        lines.append(f"Compaction requested{focus}: it runs before your next step.")
    return "\n".join(lines)


def _listed(ids: list[str]) -> str:
    more = len(ids) - MAX_HANDLES
    return ", ".join(ids[:MAX_HANDLES]) + (f" and {more} more" if more > 0 else "")


def _cuts(status: BudgetStatus, log: SessionLog | None) -> list[str]:
    out: list[str] = []
    events = log.events if log is not None else []
    if status.masked:
        ranges = [f"events {a}–{b}" for a, b in status.masked]
        out.append(f"Compacted (a summary stands in; read_event id=N shows event N): {_listed(ranges)}.")
    pruned = [i for i in status.pruned_ids if i not in status.spilled_ids]
    if pruned:
        out.append(f"Pruned or cleared tool output (read_event id=N brings it back): {_listed([f'id={i}' for i in pruned])}.")
    spilled = []
    for i in status.spilled_ids:
        ev = events[i] if 0 <= i < len(events) else None
        ref = ev.tool_result.spill_ref if ev is not None and ev.kind == "tool_result" else None
        spilled.append(f"handle={ref.handle} (event {i})" if ref is not None else f"event {i}")
    if spilled:
        out.append(f"Spilled output shown as previews (read_spill handle=… shows it whole): {_listed(spilled)}.")
    if not out:
        out.append("Nothing is spilled, pruned or compacted: the history is shown verbatim.")
    return out


def _cache(status: BudgetStatus, log: SessionLog | None, now: float) -> str:
    events = log.events if log is not None else []
    messages = [e for e in events if e.kind in ("user", "assistant", "tool_result") and e.ts]
    if not messages:
        return "Prompt cache: unknown (no timed message yet)."
    last = messages[-1].ts
    if status.model and status.last_model and status.model != status.last_model:
        return f"Prompt cache: cold — the next step is for {status.model}, the last one was for {status.last_model}."
    ttl = status.cache_ttl_s
    if now - last > ttl:
        return (f"Prompt cache: cold since about {_clock(last + ttl)} (nothing sent for {_n(now - last)} s; "
                f"a cache lives about {_n(ttl)} s): the next request pays its whole prompt.")
    starts = [e.ts for e in messages if e.id in status.cold]
    since = starts[-1] if starts else messages[0].ts
    read = next((e.assistant.usage.cache_read for e in reversed(events) if e.kind == "assistant" and e.assistant.usage), 0)
    said = f"; the last request read {_n(read)} tokens from it" if read else ""
    return f"Prompt cache: warm since {_clock(since)} (last message {_n(now - last)} s ago{said})."


def run_context_status(args: ContextStatusArgs, ctx: ToolContext) -> ToolResult:
    if ctx.services.status is None:
        return ToolResult("error: context_status needs the agent's state, which this context does not have", is_error=True)
    status = ctx.services.status()
    return ToolResult(status_text(status, ctx.services.log, _now()),
                      meta={"tokens": status.report.calibrated_total if status.report else 0})


def run_compact_context(args: CompactContextArgs, ctx: ToolContext) -> ToolResult:
    if ctx.services.request_compaction is None:
        return ToolResult("error: compact_context needs the agent, which this context does not have", is_error=True)
    focus = " ".join((args.focus or "").split())[:MAX_FOCUS_CHARS]
    ctx.services.request_compaction(focus or None)
    what = f" with the focus: {focus}" if focus else ""
    return ToolResult(f"Compaction requested{what}. It runs before your next step; the originals stay in the "
                      "session log (read_event shows them).", meta={"focus": focus})


def budget_tools() -> list[Tool]:
    """context_status, compact_context and handoff, in this order (part of the cached prefix)."""
    return [
        FunctionTool("context_status", STATUS_DESCRIPTION, ContextStatusArgs, "read", run_context_status),
        FunctionTool("compact_context", COMPACT_DESCRIPTION, CompactContextArgs, "read", run_compact_context),
        handoff_tool(),
    ]


class HandoffArgs(ToolArgs):
    goal: str | None = Field(None, description="What the new session is to do next (one or two sentences).")


HANDOFF_DESCRIPTION = (
    "Draft the opening message of a new session that continues this work with a fresh window: the goal, "
    "the user's constraints, open tasks, files, and handles to this session. The user reviews and edits it "
    "before anything starts; use it when the context is nearly full or the task changes."
)


def run_handoff(args: HandoffArgs, ctx: ToolContext) -> ToolResult:
    if ctx.services.handoff is None:
        return ToolResult("error: handoff needs the agent, which this context does not have", is_error=True)
    text = ctx.services.handoff(args.goal)
    return ToolResult("Handoff drafted and shown to the user, who edits and confirms it (nothing started yet):\n"
                      + text, meta={"handoff": True})


def handoff_tool() -> FunctionTool[HandoffArgs]:
    return FunctionTool("handoff", HANDOFF_DESCRIPTION, HandoffArgs, "read", run_handoff)
