"""`/context`: what fills the window — per-slice tokens and budget, what is in each slice, red flags,
and the spill / prune / compact history of the session, read from the session log.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ctxagent.context.history import Event, Summary, view
from ctxagent.context.report import SLICES, ContextReport
from ctxagent.tui.gauge import GLYPH, STYLE, human_tokens, slice_tokens, usage_level
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static


def _first_line(text: str, width: int = 60) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def describe_slices(report: ContextReport | None, events: Iterable[Event]) -> dict[str, list[str]]:
    """A few human lines per slice saying what the latest build put there."""
    evs = list(events)
    items = view(evs)
    out: dict[str, list[str]] = {s: [] for s in SLICES}
    out["system"].append("system prompt, project instructions (AGENTS.md / CLAUDE.md), tool schemas")
    users = [e for e in items if isinstance(e, Event) and e.kind == "user"]
    assistants = [e for e in items if isinstance(e, Event) and e.kind == "assistant"]
    summaries = [e for e in items if isinstance(e, Summary)]
    tools = [e for e in items if isinstance(e, Event) and e.kind == "tool_result"]
    if users:
        turns = [int(e.data.get("turn", 0)) for e in users]
        out["hot"].append(f"{len(users)} user and {len(assistants)} assistant messages, turns {min(turns)}–{max(turns)}")
        out["hot"].append(f"latest: “{_first_line(str(users[-1].data.get('text', '')))}”")
    for s in summaries:
        out["hot"].append(f"summary of events {s.first_id}–{s.last_id} ({s.method})")
    if not out["hot"]:
        out["hot"].append("empty")
    warm_text = ""
    for e in reversed(evs):
        if e.kind == "context_report":
            warm_text = str(e.data.get("warm") or "")
            break
    warm_lines = [ln.strip() for ln in warm_text.splitlines() if ln.strip()]
    out["warm"].extend(_first_line(ln, 70) for ln in warm_lines[:8])
    if len(warm_lines) > 8:
        out["warm"].append(f"… {len(warm_lines) - 8} more lines")
    if not warm_lines:
        out["warm"].append("nothing recalled in the latest build")
    for e in tools[-8:]:
        size = len(str(e.data.get("content", "")))
        flag = " (spilled)" if e.data.get("spill") else ""
        err = " error" if e.data.get("is_error") else ""
        out["tools"].append(f"{e.data.get('name', '?')}{err}: {size} chars{flag}")
    if len(tools) > 8:
        out["tools"].insert(0, f"{len(tools)} tool results; the latest 8:")
    if not tools:
        out["tools"].append("tool schemas only")
    if report is not None:
        out["reserve"].append(f"room for the reply: {human_tokens(slice_tokens(report)['reserve'])} tokens")
    return out


def compression_history(events: Iterable[Event]) -> list[str]:
    """One line per spill / prune / compaction / rewind, oldest first."""
    lines: list[str] = []
    last: tuple[int, int] = (0, 0)
    for e in events:
        if e.kind == "context_report":
            rep: dict[str, Any] = e.data.get("report") or {}
            spilled, pruned = int(rep.get("spilled", 0)), int(rep.get("pruned", 0))
            if (spilled, pruned) != last and (spilled or pruned):
                lines.append(f"step {rep.get('step', '?')}: {spilled} spilled, {pruned} pruned tool results")
            last = (spilled, pruned)
        elif e.kind == "compaction":
            lines.append(
                f"compaction #{e.id}: events {e.data.get('first_id')}–{e.data.get('last_id')} summarized "
                f"({e.data.get('method', '?')}{', focus: ' + str(e.data['focus']) if e.data.get('focus') else ''})"
            )
        elif e.kind == "rewind":
            lines.append(f"rewind #{e.id}: events from {e.data.get('to_id')} hidden (still in the log)")
        elif e.kind == "tool_result" and e.data.get("spill"):
            lines.append(f"spilled: {e.data.get('name', '?')} output → {_first_line(str(e.data.get('spill')), 50)}")
    return lines or ["nothing spilled, pruned or compacted yet"]


def slice_table(report: ContextReport) -> Table:
    table = Table(title=f"step {report.step} · turn {report.turn} · window {human_tokens(report.window)}", expand=True)
    table.add_column("slice")
    table.add_column("used", justify="right")
    table.add_column("budget", justify="right")
    table.add_column("of window", justify="right")
    tokens = slice_tokens(report)
    for name in (*SLICES, "free"):
        used = tokens[name]
        budget = report.budget.get(name)
        share = 100.0 * used / report.window if report.window else 0.0
        table.add_row(Text(GLYPH[name] + " " + name, style=STYLE[name]), human_tokens(used),
                      human_tokens(budget) if budget is not None else "—", f"{share:.1f}%")
    level = usage_level(report.usage_pct)
    style = {"ok": "green", "compress": "yellow", "full": "bold red"}[level]
    table.add_row(Text("total", style="bold"), human_tokens(report.calibrated_total), "",
                  Text(f"{report.usage_pct:.1f}%", style=style))
    return table


class ContextScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    ContextScreen { background: $background 60%; }
    ContextScreen > VerticalScroll { margin: 1 2; border: round $accent; background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back")]

    def __init__(self, report: ContextReport | None, events: Iterable[Event]) -> None:
        super().__init__()
        self.report = report
        self.events = list(events)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self._body(), id="context-body")
        yield Footer()

    def _body(self) -> Group | Text:
        parts: list[Any] = [Text("Context window", style="bold")]
        if self.report is None:
            parts.append(Text("No context has been built yet: send a message first.", style="dim"))
        else:
            r = self.report
            parts.append(slice_table(r))
            parts.append(Text(
                f"calibration ×{r.calibration_ratio:.2f} · {r.messages} messages · oldest visible turn "
                f"{r.oldest_visible_turn} · system prompt in window: {'yes' if r.system_in_window else 'NO'} · "
                f"not verbatim: {r.loss_pct:.0f}% · advice: {r.advice}",
                style="dim",
            ))
        parts.append(Text("\nWhat is in each slice", style="bold"))
        for name, lines in describe_slices(self.report, self.events).items():
            parts.append(Text(f"{GLYPH[name]} {name}", style=STYLE[name]))
            for ln in lines:
                parts.append(Text(f"   {ln}"))
        parts.append(Text("\nRed flags", style="bold"))
        flags = self.report.red_flags if self.report else []
        for f in flags or ["none"]:
            parts.append(Text(f"   ⚑ {f}" if flags else "   none", style="bold red" if flags else "dim"))
        parts.append(Text("\nSpill / prune / compact history", style="bold"))
        for ln in compression_history(self.events):
            parts.append(Text(f"   {ln}"))
        return Group(*parts)
