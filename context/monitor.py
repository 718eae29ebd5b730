"""Breakpoints and the per-step report: red flags, the advice (compress, new session), and the table of steps.

Thresholds are on `usage_pct` (calibrated, reserve included): ≥ 75 % → "compress",
≥ 90 % → "new_session" (configurable). Every number a user reads here is in the provider's tokens
(the local count × the calibration ratio), the unit of the window itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ctxagent.context.report import ContextReport

DEFAULT_THRESHOLDS = (0.75, 0.90)
TOOL_SHARE_FLAG = 0.50  # tool results > 50 % of the prompt
MAX_VISIBLE_MESSAGES = 50
SINGLE_RESULT_FLAG = 0.25  # one tool result > 25 % of the window
SLICE_OVER_FLAG = 5.0  # a slice holding ≥ 5× its share of the window
FLAGGED_SLICES = ("system", "warm", "tools")  # hot is meant to take what the others leave


def advice_for(usage_pct: float, thresholds: Sequence[float] = DEFAULT_THRESHOLDS) -> str:
    compress, new_session = thresholds
    if usage_pct >= new_session * 100:
        return "new_session"
    if usage_pct >= compress * 100:
        return "compress"
    return "ok"


def usage_text(usage_pct: float, digits: int = 0) -> str:
    """A usage percentage as a user reads it: "89%" at 89.9 — cut, never rounded up, so the number
    shown never reaches a breakpoint (75 %, 90 %) the usage itself has not reached (`advice_for`).
    The one place a percentage of the window is formatted."""
    value = float(usage_pct)
    shown = f"{value:.{digits}f}"
    if float(shown) > value:  # rounded up: one step down (compared as floats, the rule `advice_for` uses)
        shown = f"{float(shown) - 10 ** -digits:.{digits}f}"
    return f"{shown}%"


def red_flags(
    *, total: int, tool_result_tokens: int, largest_tool_result: int, messages: int, window: int,
    used: dict[str, int] | None = None, shares: dict[str, int] | None = None, ratio: float = 1.0,
) -> list[str]:
    """Warnings for a build. `used` / `shares`: tokens per slice (the local count) and each slice's
    share of the window (Budget.base, the provider's unit); `ratio`: the calibration that turns a local
    count into the provider's, the one unit every number a user reads is in."""
    ratio = ratio if ratio and ratio > 0 else 1.0
    flags: list[str] = []
    for name in FLAGGED_SLICES:
        have, share = math.ceil(int((used or {}).get(name, 0)) * ratio), int((shares or {}).get(name, 0))
        if share > 0 and have >= SLICE_OVER_FLAG * share:
            flags.append(f"the {name} slice holds {have / share:.1f}× its budget ({have:,} of {share:,} tokens)")
    if total > 0 and tool_result_tokens > TOOL_SHARE_FLAG * total:
        flags.append(f"tool results are {100 * tool_result_tokens / total:.0f}% of the prompt (> 50%)")
    if messages > MAX_VISIBLE_MESSAGES:
        flags.append(f"{messages} visible messages (> {MAX_VISIBLE_MESSAGES})")
    largest = largest_tool_result * ratio
    if window > 0 and largest > SINGLE_RESULT_FLAG * window:
        flags.append(f"one tool result is {100 * largest / window:.0f}% of the window (> 25%)")
    return flags


def _as_report(r: ContextReport | dict[str, Any]) -> ContextReport:
    return r if isinstance(r, ContextReport) else ContextReport.from_dict(r)


def actions_text(r: ContextReport) -> str:
    parts: list[str] = []
    if r.spilled:
        parts.append(f"spilled {r.spilled}")
    if r.pruned:
        parts.append(f"pruned {r.pruned}")
    if r.compacted:
        method = f" ({r.summary_method})" if r.summary_method else ""
        parts.append(f"compacted {r.compacted[0]}–{r.compacted[1]}{method}")
    return ", ".join(parts) or "-"


def _status(r: ContextReport) -> str:
    if r.advice == "new_session":
        return "CRITICAL"
    if r.advice == "compress":
        return "WARN"
    return "ok"


TOKENS_EXPLAINED = ("tokens: as the provider counts them — the local tokenizer's count times the calibration "
                    "ratio learned from the provider's replies; the window and the reserve are in the same unit.")
LOSS_EXPLAINED = ("loss: the share of the conversation's tokens the model did not see word for word at that "
                  "step (pruned, spilled or summarized); the originals stay in the log.")


def format_report_table(reports: Iterable[ContextReport | dict[str, Any]], title: str | None = None,
                        extra_actions: Sequence[Sequence[str]] | None = None) -> str:
    """The per-step table for `ctxagent report`: step, tokens, usage %, system prompt, loss, actions, status.

    A step is one build (one model request), numbered across the session. `extra_actions[i]` adds
    to row i's actions what happened before that step outside a build (a /compact, say).
    Breakpoint steps (usage at or over the thresholds) are called out below the table with the advice.
    """
    rows = [_as_report(r) for r in reports]
    if not rows:
        return "no context reports in this session"
    first = rows[0]
    lines: list[str] = []
    if title:
        lines.append(title)
    lines.append(f"window {first.window:,} tokens · strategy {first.strategy} · calibration ×{rows[-1].calibration_ratio:.2f}")
    header = ("step", "turn", "tokens", "usage", "system", "loss", "actions", "status")
    table = [header]
    for i, r in enumerate(rows):
        extra = list(extra_actions[i]) if extra_actions and i < len(extra_actions) else []
        actions = ", ".join([*extra, *([actions_text(r)] if actions_text(r) != "-" else [])]) or "-"
        table.append(
            (
                str(r.step or i + 1),
                str(r.turn),
                f"{r.calibrated_total:,}",
                usage_text(r.usage_pct, 1),
                "in window" if r.system_in_window else "LOST",
                f"{r.loss_pct:.0f}%",
                actions,
                _status(r),
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    right = {0, 1, 2, 3, 5}
    for i, row in enumerate(table):
        cells = [c.rjust(widths[j]) if j in right else c.ljust(widths[j]) for j, c in enumerate(row)]
        lines.append(" | ".join(cells).rstrip())
        if i == 0:
            lines.append("-+-".join("-" * w for w in widths))
    lines.append(TOKENS_EXPLAINED)
    lines.append(LOSS_EXPLAINED)
    lines.append("")
    warn = [str(r.step or n) for n, r in enumerate(rows, 1) if r.advice == "compress"]
    crit = [str(r.step or n) for n, r in enumerate(rows, 1) if r.advice == "new_session"]
    if warn or crit:
        if warn:
            lines.append(f"breakpoint (≥ compress threshold) at {_steps(warn)}: advice — compact now (/compact)")
        if crit:
            lines.append(f"critical (≥ new-session threshold) at {_steps(crit)}: advice — start a new session (/new)")
    else:
        lines.append("context usage stayed within the safe range")
    flagged = [(r.step or n, f) for n, r in enumerate(rows, 1) for f in r.red_flags]
    for n, flag in flagged[-10:]:
        lines.append(f"red flag at step {n}: {flag}")
    return "\n".join(lines)


def _steps(numbers: list[str]) -> str:
    return ("step " if len(numbers) == 1 else "steps ") + ", ".join(numbers)
