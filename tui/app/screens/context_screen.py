"""`/context`: what fills the window, read from the last request the agent actually built.

One unit throughout — tokens as the provider counts them (the local tokenizer's count times the
calibration ratio learned from the provider's replies) — and the rows add up: the four slices make
the prompt, prompt + reserve + free make the window, and the percentages are of the window. What is
in each slice is read from the request itself (its messages, the warm block, its tool results), and
the history of spill / prune / compact / rewind from the session log, in the user's words.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxagent.context import (
    DEFAULT_THRESHOLDS,
    CodeRewindData,
    ContextReport,
    Event,
    SpillRef,
    advice_for,
    usage_text,
)
from ctxagent.tui.app.safe import one_line, plain
from ctxagent.tui.app.widgets.gauge import GLYPH, LEVEL_STYLE, STYLE, human_tokens, slice_tokens
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

if TYPE_CHECKING:
    from ctxagent.context import BuildResult

PROMPT_SLICES = ("system", "hot", "warm", "tools")
OVER_FLAGGED = ("system", "warm", "tools")  # hot takes what the others leave: over its own share is normal
WHAT = {  # one short phrase: the table stays one line a row at 80 columns
    "system": "system prompt, AGENTS.md",
    "hot": "the conversation",
    "warm": "working memory",
    "tools": "tool schemas + results",
    "reserve": "kept for the reply",
    "free": "unused",
}


@dataclass(frozen=True)
class ContextSnapshot:
    """What /context shows: the agent's last build (`sent` False: built after /compact, /rewind or a
    resume, not sent yet), each slice's share of the window, and the session log for the history."""

    build: BuildResult | None
    sent: bool = True
    shares: dict[str, int] = field(default_factory=dict)  # Budget.base per slice
    tokenizer: str = ""
    events: list[Event] = field(default_factory=list)
    thresholds: tuple[float, float] = DEFAULT_THRESHOLDS

    @property
    def report(self) -> ContextReport | None:
        return self.build.report if self.build is not None else None


@dataclass(frozen=True)
class Row:
    name: str
    tokens: int
    share: int | None  # the slice's share of the window (None: not a budgeted slice)

    def over(self) -> float:
        return self.tokens / self.share if self.share else 0.0


def window_shares(report: ContextReport, shares: dict[str, int]) -> dict[str, int]:
    """Each slice's share of the window, adding up to the window: system, warm and tools their
    fractions of it (Budget.base), the reserve what the build set aside for the reply (at least the
    output limit, which can be more than its fraction), and hot the rest — what the conversation gets
    before the others' unused shares flow to it."""
    out = {n: int(shares.get(n) or report.budget.get(n) or 0) for n in ("system", "warm", "tools")}
    out["reserve"] = slice_tokens(report)["reserve"]
    out["hot"] = max(0, int(report.window) - sum(out.values()))
    return out


def slice_rows(report: ContextReport, shares: dict[str, int]) -> list[Row]:
    """Rows in the provider's unit (the gauge's `slice_tokens`): the slices (their sum is the
    calibrated prompt), the reserve and the free rest (their sum with the prompt is the window); the
    budgets (`window_shares`) add up to the window too."""
    tokens = slice_tokens(report)
    budgets = window_shares(report, shares)
    rows = [Row(n, tokens[n], budgets[n]) for n in PROMPT_SLICES]
    return [*rows, Row("reserve", tokens["reserve"], budgets["reserve"]), Row("free", tokens["free"], None)]


def slice_table(report: ContextReport, shares: dict[str, int], thresholds: tuple[float, float]) -> Table:
    table = Table(expand=True, show_edge=False)
    table.add_column("slice")
    table.add_column("tokens", justify="right")
    table.add_column("of window", justify="right")
    table.add_column("budget", justify="right")
    table.add_column("what", no_wrap=True, overflow="ellipsis")
    window = max(1, int(report.window))
    rows = slice_rows(report, shares)
    for i, row in enumerate(rows):
        budget = Text(human_tokens(row.share) if row.share else "—")
        over = row.over() if row.name in OVER_FLAGGED else 0.0
        if over >= 5:
            budget = Text(f"⚑ {over:.1f}× over {human_tokens(row.share or 0)}", style="bold red")
        elif over > 1:
            budget = Text(f"over {human_tokens(row.share or 0)}", style="yellow")
        table.add_row(Text(f"{GLYPH[row.name]} {row.name}", style=STYLE[row.name]), f"{row.tokens:,}",
                      f"{100 * row.tokens / window:.1f}%", budget, Text(WHAT[row.name], style="dim"),
                      end_section=i == len(PROMPT_SLICES) - 1)
    level = advice_for(report.usage_pct, thresholds)
    table.add_row(Text("in use", style="bold"), f"{report.calibrated_total + rows[-2].tokens:,}",
                  Text(usage_text(report.usage_pct, 1), style=LEVEL_STYLE[level]), "",
                  Text("prompt + reserve", style="dim"))
    table.add_row(Text("window", style="bold"), f"{report.window:,}", "100%", "", "")
    return table


def unit_note(report: ContextReport, tokenizer: str) -> Text:
    local = f"the local count (tokenizer: {tokenizer})" if tokenizer else "the local count"
    ratio = float(report.calibration_ratio or 1.0)
    if abs(ratio - 1.0) < 1e-9:
        how = f"Tokens as counted here: {local}; no provider counts seen yet to calibrate it."
    else:
        how = (f"Tokens as the provider counts them: {local} × {ratio:.2f}, the ratio learned from the "
               "provider's replies.")
    return Text(how + " Every number here is in that unit. Budget: the slice's share of the window (the "
                "shares add up to the window); a slice's unused share goes to the conversation.", style="dim")


def _n(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"


def _turns_of(events: list[Event], first_id: int, last_id: int) -> list[int]:
    return [e.user.turn for e in events if e.kind == "user" and first_id <= e.id <= last_id]


def _turn_span(turns: list[int]) -> str:
    if not turns:
        return "steps of the current turn"
    return f"turn {turns[0]}" if min(turns) == max(turns) else f"turns {min(turns)}–{max(turns)}"


def _spill_words(spill: SpillRef) -> str:
    lines = (spill.model_extra or {}).get("lines")
    size = f"{int(lines):,} lines" if isinstance(lines, int) else f"{spill.tokens:,} tokens" if spill.tokens else "its output"
    return f"{size} kept on disk, the model saw head and tail (read_spill pages it)"


def _images_line(messages: list[Any]) -> list[str]:
    """The images these messages send and what they cost (by the provider's rule: context/images.py)."""
    parts = [p for m in messages for p in m.images]
    if not parts:
        return []
    shown = ", ".join(f"{p.media_type.rpartition('/')[2].upper()} {p.width}×{p.height}" for p in parts[:4])
    more = ", …" if len(parts) > 4 else ""
    return [f"{_n(len(parts), 'image')} attached: {sum(p.tokens for p in parts):,} tokens ({shown}{more})"]


def system_rows(system: str, count: Callable[[str], int] | None = None) -> list[str]:
    """The system slice by part: ctxagent's own prompt, then each instruction file (the user's, the
    root's, the nested ones the agent loaded as it worked in their folders), with its tokens."""
    from ctxagent.agent import instruction_sections

    sections = instruction_sections(system)

    def size(text: str) -> str:
        return f": {count(text):,} tokens" if count is not None else ""

    own = system.split("\n# ", 1)[0] if sections else system
    rows = ["ctxagent's system prompt" + size(own) + ("" if any(w == "project" for w, _, _ in sections)
                                                       else "; no AGENTS.md / CLAUDE.md in this repository")]
    for whose, name, text in sections:
        where = (" (yours, for every repository)" if whose == "user" else
                 f" (loaded as the agent worked in {name.rsplit('/', 1)[0]}/)" if "/" in name else "")
        rows.append(f"{name}{where}" + size(text))
    return rows


def describe_request(build: BuildResult, events: list[Event],
                     count: Callable[[str], int] | None = None) -> dict[str, list[str]]:
    """A few lines per slice saying what this request holds (`count`: a text's tokens, as shown)."""
    req = build.request
    out: dict[str, list[str]] = {name: [] for name in (*PROMPT_SLICES, "reserve")}
    out["system"] += system_rows(req.system, count)
    users = [m for m in req.messages if m.role == "user" and m.kind == "message"]
    replies = [m for m in req.messages if m.role == "assistant"]
    summaries = [m for m in req.messages if m.kind == "summary"]
    by_id = {e.id: e for e in events}
    turns = [by_id[m.event_id].user.turn for m in users if m.event_id in by_id and by_id[m.event_id].kind == "user"]
    if users or replies:
        span = f", {_turn_span(turns)}" if turns else ""
        out["hot"].append(f"{_n(len(users), 'message')} from you and {_n(len(replies), 'reply', 'replies')}{span}")
        if users:
            out["hot"].append(f"latest: “{one_line(users[-1].content, 70)}”")
    out["hot"] += _images_line([m for m in req.messages if m.role == "user"])
    for m in summaries:
        comp = by_id.get(m.event_id or -1)
        if comp is not None and comp.kind == "compaction":
            record = comp.compaction
            covered = _turns_of(events, record.first_id, record.last_id)
            how = "a model summary" if record.method == "model" else "a summary extracted without a model"
            out["hot"].append(f"{how} of {_turn_span(covered)} (the originals are in the log; /rewind brings them back)")
    if not out["hot"]:
        out["hot"].append("empty")
    warm = [ln.strip()[2:] for ln in build.warm_text.splitlines() if ln.strip().startswith("- ")]  # one record a line
    out["warm"] += [one_line(ln, 90) for ln in warm[:8]]
    if len(warm) > 8:
        out["warm"].append(f"… and {len(warm) - 8} more lines")
    if not warm:
        out["warm"].append("nothing recalled for this request")
    results = [m for m in req.messages if m.role == "tool"]
    spilled, pruned = set(build.spilled_ids), set(build.pruned_ids)
    out["tools"].append(f"{_n(len(req.tools), 'tool schema')}; {_n(len(results), 'tool result')}"
                        + (f", {len([m for m in results if m.event_id in spilled])} of them spill previews" if spilled else "")
                        + (f", {len([m for m in results if m.event_id in pruned])} cut from view" if pruned else ""))
    rows = build.report.schema_tokens  # built-in tools vs each MCP server (only with MCP tools)
    if rows:
        out["tools"].append("schemas: " + ", ".join(f"{name} {tokens:,}" for name, tokens in rows.items()))
    out["tools"] += _images_line(results)
    for m in results[-6:]:
        state = (" (spill preview)" if m.event_id in spilled else "" if m.event_id not in pruned
                 else " (cleared to one line)" if m.content.startswith("[cleared:") else " (cut to head and tail)")
        error = " — failed" if m.is_error else ""
        out["tools"].append(f"{m.name or '?'}{error}{state}: {one_line(m.content, 60)}")
    out["reserve"].append(f"the reply may use up to {req.max_tokens:,} tokens")
    return out


def _counter(snap: ContextSnapshot) -> Callable[[str], int] | None:
    """Tokens as this screen shows them: the local count times the calibration ratio."""
    report = snap.report
    if not snap.tokenizer or report is None:
        return None
    from ctxagent.context import get_counter

    counter, ratio = get_counter(snap.tokenizer), float(report.calibration_ratio)
    return lambda text: round(counter.count(text) * ratio)


def history_lines(events: Iterable[Event]) -> list[str]:
    """One line per spill, prune, compaction and rewind (of the conversation or the code) of the session, oldest first."""
    evs = list(events)
    lines: list[str] = []
    last: tuple[int, int] = (0, 0)
    turn = 0
    for e in evs:
        if e.kind == "user":
            turn = e.user.turn or turn
        elif e.kind == "context_report":
            rep = e.context_report.report
            spilled, pruned = int(rep.get("spilled", 0) or 0), int(rep.get("pruned", 0) or 0)
            if (spilled, pruned) != last and pruned:
                lines.append(f"step {rep.get('step', '?')}: {pruned} older tool message{'s' if pruned != 1 else ''} "
                             "cut from view (read_event brings any back)")
            last = (spilled, pruned)
        elif e.kind == "compaction":
            record = e.compaction
            covered = _turns_of(evs, record.first_id, record.last_id)
            how = "by the model" if record.method == "model" else "without a model (extracted)"
            focus = f", focus “{one_line(record.focus, 40)}”" if record.focus else ""
            seeded = " (carried over from the previous session)" if (record.model_extra or {}).get("seeded_from") else ""
            lines.append(f"{_turn_span(covered)} summarized {how}{focus}{seeded}")
        elif e.kind == "rewind":
            back = e.rewind
            by_turn: object = back.turn
            if by_turn is None:
                target = next((x for x in evs if x.id == back.to_id and x.kind == "user"), None)
                by_turn = target.user.turn if target is not None else "?"
            lines.append(f"rewound to before turn {by_turn}: it and later turns hidden (kept in the log)")
        elif e.kind == "code_rewind":
            code = e.as_(CodeRewindData)
            files = len(code.restored) + len(code.deleted)
            lines.append(f"code rewound to before turn {code.turn} ({files} file{'s' if files != 1 else ''} back): the "
                         "conversation kept, the model told those changes are undone")
        elif e.kind == "tool_result" and (spill := e.tool_result.spill_ref) is not None:
            lines.append(f"turn {turn} · {e.tool_result.name or '?'}: {_spill_words(spill)}")
    return lines or ["nothing spilled, cut, summarized or rewound yet"]


def price_lines(events: list[Event]) -> list[str]:
    """Each clear's and compaction's cache effect (agent.relief_lines: tokens re-written, cost before → after)."""
    from ctxagent.agent import relief_lines

    return relief_lines(events) or ["no clear or compaction has changed the cached history yet"]


def facts_line(report: ContextReport) -> Text:
    shown = 100.0 - float(report.loss_pct)
    oldest = f"turn {report.oldest_visible_turn}" if report.oldest_visible_turn else "none"
    return Text(
        f"oldest turn sent word for word: {oldest} · system prompt included: "
        f"{'yes' if report.system_in_window else 'NO'} · {shown:.0f}% of the conversation so far is sent word for "
        f"word (the rest: tool output cut or spilled, turns summarized)",
        style="dim",
    )


class ContextScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    ContextScreen { background: $background 60%; }
    ContextScreen > VerticalScroll { margin: 1 2; border: round $accent; background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back")]

    def __init__(self, snapshot: ContextSnapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self._body(), id="context-body")
        yield Footer()

    def _body(self) -> Group:
        snap = self.snapshot
        report = snap.report
        parts: list[Any] = []
        if report is None:
            parts.append(Text("Context window", style="bold"))
            parts.append(Text("No request has been built yet: send a message first.", style="dim"))
            return Group(*parts)
        which = f"the last request sent (step {report.step})" if snap.sent else "the next request (built, not sent yet)"
        parts.append(Text(f"Context window — {which}, turn {report.turn}", style="bold"))
        parts.append(slice_table(report, snap.shares, snap.thresholds))
        parts.append(unit_note(report, snap.tokenizer))
        parts.append(facts_line(report))
        parts.append(Text("\nWhat is in it", style="bold"))
        assert snap.build is not None
        for name, lines in describe_request(snap.build, snap.events, _counter(snap)).items():
            parts.append(Text(f"{GLYPH[name]} {name}", style=STYLE[name]))
            for line in lines:
                parts.append(plain(f"   {line}"))
        parts.append(Text("\nRed flags", style="bold"))
        for flag in report.red_flags or []:
            parts.append(plain(f"   ⚑ {flag}", style="bold red"))
        if not report.red_flags:
            parts.append(Text("   none", style="dim"))
        parts.append(Text("\nWhat was spilled, cut, summarized or rewound", style="bold"))
        for line in history_lines(snap.events):
            parts.append(plain(f"   {line}"))
        parts.append(Text("\nPrompt-cache price of each cut (over the calls it served, before → after)", style="bold"))
        for line in price_lines(snap.events):
            parts.append(plain(f"   {line}"))
        return Group(*parts)
