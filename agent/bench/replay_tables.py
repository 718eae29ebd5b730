"""The replay's tables (terminal text or Markdown): the measures per strategy, the details, the source's compaction.

Every table shows the trivial baseline `last2+names`, and a line under the first one says which of
the measures it also meets: a measure the baseline meets does not tell the engine apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxagent.agent.bench.tables import markdown, text_table

ORDER = ("reference", "full", "window", "ctxagent", "last2+names", "anthropic-clear", "anthropic-compact",
         "openai-compact")
BASELINE = "last2+names"
MAIN_COLUMNS = ("strategy", "tokens_sum", "vs ref", "tokens_p95", "overflows", "retention", "retention w/o lists",
                "requirement_retention", "decision_retention", "cost_cached", "vs ref", "cost_cached +last-msg bp",
                "prefix_reuse")
DETAIL_COLUMNS = ("strategy", "tokens_mean", "req: user", "req: tool", "req: test", "cost_uncached", "cache read share",
                  "build_ms_p50", "build_ms_p95", "spills", "prunes", "compactions", "extra calls")
QUALITY = (("retention", "retention"), ("retention_without_lists", "retention w/o lists"),
           ("requirement_retention", "requirement_retention"), ("decision_retention", "decision_retention"))
MEETS_MARGIN = 0.02  # the baseline "meets" a measure when it is within this of ctxagent or above


def _pct(value: float | None, ref: float | None) -> str | None:
    if value is None or not ref:
        return None
    return f"{(value / ref - 1) * 100:+.0f}%"


def _names(result: dict[str, Any]) -> list[str]:
    strategies = result.get("strategies") or {}
    return [n for n in ORDER if n in strategies] + [n for n in strategies if n not in ORDER]


def main_rows(result: dict[str, Any]) -> list[list[Any]]:
    strategies = result.get("strategies") or {}
    ref = strategies.get("reference") or {}
    rows = []
    for name in _names(result):
        s = strategies[name]
        label = f"{name} (baseline)" if name == BASELINE else name
        rows.append([label, s["tokens_sum"], _pct(s["tokens_sum"], ref.get("tokens_sum")), s["tokens_p95"], s["overflows"],
                     s["retention"], s.get("retention_without_lists"), s.get("requirement_retention"),
                     s.get("decision_retention"), s.get("cost_cached"), _pct(s.get("cost_cached"), ref.get("cost_cached")),
                     s.get("cost_cached_last_message"), s["prefix_reuse"]])
    return rows


def detail_rows(result: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for name in _names(result):
        s = result["strategies"][name]
        origin = s.get("requirement_retention_by_origin") or {}
        rows.append([name, s["tokens_mean"], origin.get("user"), origin.get("tool"), origin.get("test"),
                     s.get("cost_uncached"), s.get("cache_read_share"), s["build_ms_p50"], s["build_ms_p95"], s["spills"],
                     s["prunes"], s["compactions"], s.get("extra_calls")])
    return rows


def baseline_note(result: dict[str, Any]) -> str:
    """Which measures the trivial baseline also meets: within MEETS_MARGIN of the better of ctxagent and the
    reference, or above it."""
    strategies = result.get("strategies") or {}
    base, ours, ref = strategies.get(BASELINE), strategies.get("ctxagent"), strategies.get("reference") or {}
    if base is None or ours is None:
        return ""
    met = []
    for key, label in QUALITY:
        bar = max((v for v in (ours.get(key), ref.get(key)) if v is not None), default=None)
        if base.get(key) is not None and bar is not None and base[key] >= bar - MEETS_MARGIN:
            theirs = f"ctxagent {_f(ours.get(key))}, reference {_f(ref.get(key))}"
            met.append(f"{label} {base[key]:.3f} ({theirs})")
    cheaper = [f"{label} {base[key]:,} (ctxagent {ours[key]:,})" for key, label in
               (("tokens_sum", "tokens"), ("cost_cached", "cost_cached")) if base.get(key) is not None
               and ours.get(key) is not None and base[key] < ours[key]]
    if met:
        text = "The trivial baseline last2+names also meets " + "; ".join(met) + ": these measures do not tell it apart"
    else:
        text = "The trivial baseline last2+names meets none of the retention measures"
    if cheaper:
        text += ", and it is cheaper on " + "; ".join(cheaper)
    if ours.get("overflows"):
        text += f" (ctxagent overflowed on {ours['overflows']:,} calls, which count as nothing kept)"
    return text + "."


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def after_rows(result: dict[str, Any]) -> tuple[list[str], list[list[Any]]] | None:
    after = result.get("after_source_compaction")
    if not after:
        return None
    names = [n for n in _names(result) if n != "reference"] + ["reference"]
    header = ["", *[("reference (real summary)" if n == "reference" else n) for n in names]]
    rows = [[label, *[(after.get(key) or {}).get(n) for n in names]] for key, label in
            (("retention", "retention"), ("early_retention", "early-fact retention"),
             ("requirement_retention", "requirement_retention"), ("decision_retention", "decision_retention"))]
    return header, rows


def head_line(result: dict[str, Any]) -> str:
    fit = result.get("fit")
    fit_s = (f"fit reported = {fit['a']:,.0f} + {fit['b']:.3f}·local (median rel. err {fit['median_rel_err'] * 100:.1f} %)"
             if fit else "no reported tokens (reference = its own view, counted locally)")
    prefix = result.get("prefix") or {}
    pre_s = (f"every request +{prefix['tokens']:,} local tokens of stable prefix ({prefix.get('how')})"
             if prefix.get("tokens") else "no prefix added")
    rules = result.get("cache_rules") or {}
    cache_s = (f"cache rules {rules.get('name')} (read {rules.get('read')}×, write {rules.get('write')}×, "
               f"≥ {rules.get('min_tokens'):,} tokens, TTL {rules.get('ttl_s'):.0f} s)") if rules else ""
    return (f"{result['source']} — W = {result['window']:,}, {result['runs']} runs, {result['calls']:,} calls; {fit_s}; "
            f"{pre_s}; tokens are provider tokens (calibrator ratio at the end {result.get('calibration_ratio')}); {cache_s}")


def replay_text(result: dict[str, Any], md: bool = False) -> str:
    table = markdown if md else text_table
    parts = [head_line(result), table(MAIN_COLUMNS, main_rows(result)), baseline_note(result),
             table(DETAIL_COLUMNS, detail_rows(result))]
    after = after_rows(result)
    if after is not None:
        a = result["after_source_compaction"]
        parts.append(f"After the source's own compaction ({a['calls']} calls, {a['facts']} facts, {a['early_facts']} early):")
        parts.append(table(*after))
    return ("\n\n" if md else "\n").join(p for p in parts if p)


def sweep_rows(results: Sequence[dict[str, Any]], strategies: Sequence[str] = ("ctxagent", BASELINE)) -> list[list[Any]]:
    """One row per (window, strategy): the window sweep's compact table."""
    rows = []
    for r in results:
        ref = r["strategies"].get("reference") or {}
        for name in strategies:
            s = r["strategies"].get(name)
            if s is None:
                continue
            rows.append([f"{r['window']:,}", (r.get("prefix") or {}).get("mode"), name, s["tokens_sum"],
                         _pct(s["tokens_sum"], ref.get("tokens_sum")),
                         s["overflows"], ref.get("overflows"), s.get("requirement_retention"), s.get("decision_retention"),
                         s["retention"], s.get("cost_cached"), _pct(s.get("cost_cached"), ref.get("cost_cached"))])
    return rows


SWEEP_COLUMNS = ("W", "prefix", "strategy", "tokens_sum", "vs ref", "overflows", "reference overflows", "requirement_retention",
                 "decision_retention", "retention", "cost_cached", "vs ref")


def sweep_text(results: Sequence[dict[str, Any]], md: bool = False) -> str:
    if not results:
        return ""
    head = (f"{results[0]['source']} at smaller windows (ctxagent and the trivial baseline; the reference is the same run; "
            "prefix auto: the source's estimated system prompt and tools in every request, product: ctxagent's own):")
    table = (markdown if md else text_table)(SWEEP_COLUMNS, sweep_rows(results))
    return f"{head}\n\n{table}" if md else f"{head}\n{table}"
