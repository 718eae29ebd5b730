"""What `ctxagent replay` says: a row per session, a one-screen summary, and the JSON of `--out`.

Every figure is the bench's (StrategyStats.to_dict, result_of): tokens are provider tokens — the
original run's as Claude Code reported them, a strategy's as its local count × the calibrated
ratio; costs are the bench's, in input tokens of the main model, turned into dollars at that model's
list price (each call was already weighted by its own model's price); retention is the mean over
calls of the share of requirement / decision lines stated so far that the request still carries.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ctxagent.tui.lab.bench.prices import price_of
from ctxagent.tui.lab.bench.tables import text_table
from ctxagent.tui.lab.replay.run import OURS, Replay, SessionResult
from ctxagent.tui.lab.replay.sessions import ReadReport, kind_of

PRIVACY = ("Privacy: this read your own transcripts on this machine; nothing was sent anywhere, and nothing was "
           "written but what --out / --plot name.")


def tokens(n: float | None) -> str:
    if n is None:
        return "–"
    if abs(n) >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if abs(n) >= 10_000:
        return f"{n / 1000:.0f}k"
    return f"{n:,.0f}"


def pct(value: float | None, ref: float | None) -> str:
    if value is None or not ref:
        return "–"
    return f"{(value / ref - 1) * 100:+.0f}%"


def share(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


class Money:
    """Costs in the main model's input tokens → dollars at its list price (or tokens when it has none)."""

    def __init__(self, main: str):
        self.main = main
        self.per_token = price_of(main).input / 1_000_000

    def usd(self, units: float | None) -> float | None:
        return None if units is None or not self.per_token else round(units * self.per_token, 4)

    def text(self, units: float | None) -> str:
        if units is None:
            return "–"
        if not self.per_token:
            return f"{tokens(units)} tok"
        usd = units * self.per_token
        return f"${usd:,.2f}" if usd < 1000 else f"${usd:,.0f}"


def _lead(replay: Replay) -> str:
    return replay.options.strategies[0]


def figures(stats: dict[str, Any], money: Money) -> dict[str, Any]:
    """The few figures a row shows, out of one strategy's bench dict."""
    return {"tokens_sum": stats["tokens_sum"], "overflows": stats["overflows"],
            "failed_builds": stats.get("failed_builds", 0), "compactions": stats.get("compactions", 0),
            "cost_cached_usd": money.usd(stats.get("cost_cached")), "cost_uncached_usd": money.usd(stats.get("cost_uncached")),
            "cost_real_usd": money.usd(stats.get("cost_real")),
            "requirement_retention": stats.get("requirement_retention"), "decision_retention": stats.get("decision_retention"),
            "used_later": (stats.get("used_later") or {}).get("pooled")}


def session_json(r: SessionResult, replay: Replay, money: Money) -> dict[str, Any]:
    f = r.session.file
    strategies = {n: s.to_dict() for n, s in r.totals.strategies.items()}
    original = r.totals.reference.to_dict()
    lead = _lead(replay)
    return {
        "session": f.session, "parent": f.parent, "project": f.project, "path": str(f.path),
        "started": _iso(r.session.started), "ended": _iso(r.session.ended), "calls": r.totals.calls,
        "models": dict(r.totals.models), "original": figures(original, money),
        "strategies": {n: figures(s, money) for n, s in strategies.items()},
        "series": {"original": [round(x) for x in r.totals.reference.tokens],
                   lead: [round(x) for x in r.totals.strategies[lead].tokens],
                   "original_compactions": r.source_compactions, f"{lead}_compactions": r.compactions},
        "skipped": dict(sorted(r.session.traj.skipped.items())),
        "bench": {"reference": original, "strategies": strategies},
    }


def _iso(t: float | None) -> str | None:
    return dt.datetime.fromtimestamp(t).astimezone().isoformat(timespec="seconds") if t else None


def _when(t: float | None) -> str:
    return dt.datetime.fromtimestamp(t).astimezone().strftime("%Y-%m-%d %H:%M") if t else "–"


def session_rows(replay: Replay, money: Money) -> tuple[list[str], list[list[Any]]]:
    lead = _lead(replay)
    header = ["session", "started", "calls", "sent", lead, "vs sent", "overflows", "cost cached", "uncached",
              "req kept", "decisions kept", "used-later kept"]
    rows = []
    for r in _grouped(replay.results):
        o, s = r.totals.reference.to_dict(), r.totals.strategies[lead].to_dict()
        f = r.session.file
        name = _short_id(f.session) if f.parent is None else f"└ {_short_id(f.session)}"
        rows.append([name, _when(r.session.started), r.totals.calls, tokens(o["tokens_sum"]), tokens(s["tokens_sum"]),
                     pct(s["tokens_sum"], o["tokens_sum"]), f"{o['overflows']} / {s['overflows']}",
                     f"{money.text(o['cost_cached'])} → {money.text(s['cost_cached'])}",
                     f"{money.text(o['cost_uncached'])} → {money.text(s['cost_uncached'])}",
                     f"{share(o['requirement_retention'])} / {share(s['requirement_retention'])}",
                     f"{share(o['decision_retention'])} / {share(s['decision_retention'])}",
                     f"{share((o['used_later'] or {}).get('pooled'))} / {share((s['used_later'] or {}).get('pooled'))}"])
    return header, rows


def _short_id(session: str) -> str:
    """A session's id as a row shows it: a uuid's first block (as Claude Code's /resume lists them), else the name."""
    head = session.split("-", 1)[0]
    return head if len(session) == 36 and len(head) == 8 else session[:20]


def _grouped(results: list[SessionResult]) -> list[SessionResult]:
    """Sessions in time order, each followed by its subagents."""
    mains = [r for r in results if r.session.file.parent is None]
    subs: dict[str, list[SessionResult]] = {}
    for r in results:
        if r.session.file.parent is not None:
            subs.setdefault(r.session.file.parent, []).append(r)
    out: list[SessionResult] = []
    for r in mains:
        out.append(r)
        out += subs.pop(r.session.file.session, [])
    return out + [r for rs in subs.values() for r in rs]  # subagents whose session is not here


def table_text(replay: Replay, money: Money) -> str:
    lead = _lead(replay)
    head = (f"Per session: the original run (what Claude Code sent, as reported) / {lead} replayed at W = "
            f"{replay.options.window:,}; costs original → {lead}; └ a subagent of the session above.")
    return head + "\n" + text_table(*session_rows(replay, money))


def summary_lines(replay: Replay, read: ReadReport, where: str, money: Money, window_why: str) -> list[str]:
    s = replay.summary
    lead = _lead(replay)
    strategies = s["strategies"]
    o, ours = strategies["reference"], strategies[lead]
    mains = sum(1 for r in replay.results if r.session.file.parent is None)
    subs = len(replay.results) - mains
    out = [f"Summary — {mains} session{'s' if mains != 1 else ''}"
           + (f" and {subs} subagent{'s' if subs != 1 else ''}" if subs else "")
           + f", {s['calls']:,} calls, from {where}",
           f"  context sent        original {tokens(o['tokens_sum'])} tokens · {lead} {tokens(ours['tokens_sum'])} "
           f"({pct(ours['tokens_sum'], o['tokens_sum'])})",
           f"  cost with cache     original {money.text(o['cost_cached'])} · {lead} {money.text(ours['cost_cached'])} "
           f"({pct(ours['cost_cached'], o['cost_cached'])})"
           + (f"   [the original's real bill from its reported usage: {money.text(o['cost_real'])}]"
              if o.get("cost_real") is not None else ""),
           f"  cost without cache  original {money.text(o['cost_uncached'])} · {lead} {money.text(ours['cost_uncached'])} "
           f"({pct(ours['cost_uncached'], o['cost_uncached'])})",
           f"  overflows (> W)     original {o['overflows']} · {lead} {ours['overflows']}"
           + (f" ({ours['failed_builds']} builds that could not fit)" if ours.get("failed_builds") else "")
           + f" · compactions: original {o.get('compactions', 0)}, {lead} {ours.get('compactions', 0)}",
           f"  kept (original / {lead})  requirements {share(o['requirement_retention'])} / "
           f"{share(ours['requirement_retention'])} · decisions {share(o['decision_retention'])} / "
           f"{share(ours['decision_retention'])} · used-later {share(_used(o))} / {share(_used(ours))}"]
    for name in replay.options.strategies[1:]:
        b = strategies[name]
        out.append(f"  baseline {name:<11} sent {tokens(b['tokens_sum'])} ({pct(b['tokens_sum'], o['tokens_sum'])}), "
                   f"cost {money.text(b['cost_cached'])}, kept requirements {share(b['requirement_retention'])}, "
                   f"decisions {share(b['decision_retention'])}, used-later {share(_used(b))}")
    out.append("  " + skipped_line(read))
    out += ["Caveats:", *(f"  - {c}" for c in caveats(replay, money, window_why)), PRIVACY]
    return out


def _used(stats: dict[str, Any]) -> float | None:
    return (stats.get("used_later") or {}).get("pooled")


def skipped_line(read: ReadReport) -> str:
    problems = read.problems()
    parts = [f"{n:,} × {kind_of(k)}" for k, n in problems.items()]
    if read.unreadable:
        parts.append(f"{len(read.unreadable)} unreadable file{'s' if len(read.unreadable) != 1 else ''}")
    if read.no_calls:
        parts.append(f"{read.no_calls} transcript{'s' if read.no_calls != 1 else ''} without a model call")
    said = "skipped and counted: " + ("; ".join(parts) if parts else "nothing unreadable")
    return said + f" (and {read.by_design():,} records the replay has no use for: progress, thinking …)"


def caveats(replay: Replay, money: Money, window_why: str) -> list[str]:
    s = replay.summary
    lead = _lead(replay)
    prefix = s.get("prefix") or {}
    out = [f"A what-if, not a rerun: your sessions' own answers are replayed; with {lead}'s context the model might "
           "have answered differently.",
           f"{lead}'s tokens are a local count × the ratio learned from your reported usage (at the end "
           f"{s.get('calibration_ratio')}); the original's are what Claude Code reported.",
           (f"The system prompt and tool schemas a transcript lacks are estimated: +{prefix['tokens']:,} tokens in "
            "every request (the intercept of a fit over your calls)." if prefix.get("tokens") else
            "Too few calls to estimate the system prompt and tools a transcript lacks: none added."),
           f"Costs are the input side (prompts, cache reads and writes, summaries) at list prices, each call at its "
           f"own model, in {money.main}'s; the answers are the same in both and left out.",
           f"W = {replay.options.window:,}: {window_why} (--window to change).",
           "Retention is a rule, not a reader: the share of requirement / decision lines stated so far that a "
           "request still carries (used-later: of the strings the agent used next)."]
    notes = s.get("notes") or {}
    if any("memory layer missing" in n for n in notes):
        out.append(f"{lead} ran without its memory store here (the memory layer could not load).")
    return out


def result_json(replay: Replay, read: ReadReport, where: str, money: Money, window_why: str) -> dict[str, Any]:
    return {"where": where, "window": replay.options.window, "window_why": window_why,
            "strategies": replay.options.strategies, "main_model": money.main,
            "usd_per_main_input_token": money.per_token or None,
            "sessions": [session_json(r, replay, money) for r in _grouped(replay.results)],
            "skipped": {"problems": read.problems(), "by_design": read.by_design(), "unreadable": read.unreadable,
                        "without_model_calls": read.no_calls},
            "summary": replay.summary, "caveats": caveats(replay, money, window_why), "privacy": PRIVACY}


__all__ = ["OURS", "Money", "result_json", "summary_lines", "table_text"]
