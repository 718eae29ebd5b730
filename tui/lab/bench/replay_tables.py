"""The replay's tables (terminal text or Markdown): the headline first, then the details.

Per source and window: a head line; the **headline table** — used-later retention (the fidelity
figure no detector of the product defines), tokens and like-for-like cached cost against the real
run, overflows beside them, requirement retention; a line with the reference's real bill; a line
per trivial baseline (`grep`, `last2+names`) saying which measures it also meets (a measure a
baseline meets does not tell the engine apart); then the fidelity details, the cost details, where
ctxagent's missing strings went, and the after-compaction table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxagent.tui.lab.bench.tables import markdown, text_table
from ctxagent.tui.lab.bench.used_later import KINDS

ORDER = ("reference", "full", "window", "ctxagent", "grep", "last2+names", "anthropic-clear", "anthropic-compact",
         "openai-compact")
BASELINE = "last2+names"
GREP = "grep"
BASELINES = (GREP, BASELINE)
HEADLINE_COLUMNS = ("strategy", "used-later kept", "per call", "tokens_sum", "vs ref", "cost_cached", "vs ref",
                    "overflows", "requirement_retention")
FIDELITY_COLUMNS = ("strategy", "used-later before src compaction", "after", "retention", "retention w/o lists",
                    "decision_retention", "req: user", "req: tool", "req: test", *(f"used: {k}" for k in KINDS))
COST_COLUMNS = ("strategy", "tokens_mean", "tokens_p95", "cost_cached +last-msg bp", "vs ref", "overflows", "cost_uncached",
                "cache read share", "cache written", "summarization cost", "prefix_reuse", "build_ms_p50",
                "build_ms_p95", "spills", "prunes", "compactions", "extra calls", "failed builds")
QUALITY = (("used_later", "used-later retention"), ("requirement_retention", "requirement_retention"),
           ("decision_retention", "decision_retention"), ("retention", "retention"),
           ("retention_without_lists", "retention w/o lists"))
MEETS_MARGIN = 0.02  # a baseline "meets" a measure when it is within this of ctxagent or above


def _pct(value: float | None, ref: float | None) -> str | None:
    if value is None or not ref:
        return None
    return f"{(value / ref - 1) * 100:+.0f}%"


def _names(result: dict[str, Any]) -> list[str]:
    strategies = result.get("strategies") or {}
    return [n for n in ORDER if n in strategies] + [n for n in strategies if n not in ORDER]


def _label(name: str) -> str:
    return f"{name} (baseline)" if name in BASELINES else name


def _used(s: dict[str, Any], key: str = "pooled") -> float | None:
    return (s.get("used_later") or {}).get(key)


def quality(s: dict[str, Any], key: str) -> float | None:
    return _used(s) if key == "used_later" else s.get(key)


def main_rows(result: dict[str, Any]) -> list[list[Any]]:
    """The headline table's rows."""
    strategies = result.get("strategies") or {}
    ref = strategies.get("reference") or {}
    rows = []
    for name in _names(result):
        s = strategies[name]
        rows.append([_label(name), _used(s), _used(s, "mean_over_calls"), s["tokens_sum"],
                     _pct(s["tokens_sum"], ref.get("tokens_sum")), s.get("cost_cached"),
                     _pct(s.get("cost_cached"), ref.get("cost_cached")), s["overflows"], s.get("requirement_retention")])
    return rows


def fidelity_rows(result: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for name in _names(result):
        s = result["strategies"][name]
        u = s.get("used_later") or {}
        origin = s.get("requirement_retention_by_origin") or {}
        kinds = u.get("by_kind") or {}
        rows.append([name, (u.get("before_source_compaction") or {}).get("pooled"),
                     (u.get("after_source_compaction") or {}).get("pooled"), s.get("retention"),
                     s.get("retention_without_lists"), s.get("decision_retention"), origin.get("user"),
                     origin.get("tool"), origin.get("test"), *((kinds.get(k) or {}).get("pooled") for k in KINDS)])
    return rows


def cost_rows(result: dict[str, Any]) -> list[list[Any]]:
    strategies = result["strategies"]
    ref = strategies.get("reference") or {}
    rows = []
    for name in _names(result):
        s = strategies[name]
        rows.append([name, s["tokens_mean"], s["tokens_p95"], s.get("cost_cached_last_message"),
                     _pct(s.get("cost_cached_last_message"), ref.get("cost_cached_last_message")), s["overflows"],
                     s.get("cost_uncached"), s.get("cache_read_share"), s.get("cache_written"),
                     s.get("summarization_cost"), s.get("prefix_reuse"), s.get("build_ms_p50"), s.get("build_ms_p95"),
                     s.get("spills"), s.get("prunes"), s.get("compactions"), s.get("extra_calls"), s.get("failed_builds")])
    return rows


def detail_rows(result: dict[str, Any]) -> list[list[Any]]:
    """The cost details (kept under its old name for callers)."""
    return cost_rows(result)


def real_bill_line(result: dict[str, Any]) -> str:
    ref = (result.get("strategies") or {}).get("reference") or {}
    real, sim = ref.get("cost_real"), ref.get("cost_cached")
    rules = result.get("cache_rules") or {}
    ttl = (f"; {rules['runs_with_1h_ttl']} of {result.get('runs')} runs wrote with the 1-hour TTL (priced at "
           f"{rules.get('write_1h')}×)") if rules.get("runs_with_1h_ttl") else ""
    if real is None:
        return (f"The reference's cost_cached is the same cache simulation as the strategies' ({sim:,}); the source "
                f"reported no cache usage, so there is no real bill to show beside it{ttl}.") if sim is not None else ""
    ratio = f"{sim / real:.3f}" if real and sim is not None else "–"
    return (f"Reference cost_cached is simulated like the strategies' ({sim:,}); its real bill from the reported usage is "
            f"{real:,} (simulated / real = {ratio}){ttl}. Costs are in input tokens of "
            f"{(result.get('pricing') or {}).get('main', 'the main model')}; every call is priced with its own model.")


def baseline_note(result: dict[str, Any], baseline: str = BASELINE) -> str:
    """Which measures a trivial baseline also meets: within MEETS_MARGIN of the better of ctxagent and the
    reference, or above it."""
    strategies = result.get("strategies") or {}
    base, ours, ref = strategies.get(baseline), strategies.get("ctxagent"), strategies.get("reference") or {}
    if base is None or ours is None:
        return ""
    met = []
    for key, label in QUALITY:
        bar = max((v for v in (quality(ours, key), quality(ref, key)) if v is not None), default=None)
        mine = quality(base, key)
        if mine is not None and bar is not None and mine >= bar - MEETS_MARGIN:
            theirs = f"ctxagent {_f(quality(ours, key))}, reference {_f(quality(ref, key))}"
            met.append(f"{label} {mine:.3f} ({theirs})")
    cheaper = [f"{label} {base[key]:,} (ctxagent {ours[key]:,})" for key, label in
               (("tokens_sum", "tokens"), ("cost_cached", "cost_cached")) if base.get(key) is not None
               and ours.get(key) is not None and base[key] < ours[key]]
    if met:
        text = f"The trivial baseline {baseline} also meets " + "; ".join(met) + ": these measures do not tell it apart"
    else:
        text = f"The trivial baseline {baseline} meets none of the retention measures"
    if cheaper:
        text += ", and it is cheaper on " + "; ".join(cheaper)
    if ours.get("overflows"):
        text += (f" (ctxagent overflowed on {ours['overflows']:,} calls, {ours.get('failed_builds', 0):,} of them failed "
                 "builds counted at the un-relieved size and as nothing kept)")
    return text + "."


def missing_line(result: dict[str, Any]) -> str:
    s = (result.get("strategies") or {}).get("ctxagent")
    if not s:
        return ""
    u = s.get("used_later") or {}
    miss = u.get("missing") or {}
    if not u.get("strings"):
        return ""
    return (f"ctxagent's requests lack {miss.get('strings', 0):,} of the {u['strings']:,} strings the real agent used next "
            f"({1 - (u.get('pooled') or 0):.1%} pooled, {1 - (u.get('mean_over_calls') or 0):.1%} as a mean over calls): "
            f"{miss.get('behind_handle', 0):,} behind a handle the request names (read_event / read_spill / a summary's "
            f"range: the model can ask, at the price of a call), {miss.get('gone', 0):,} gone from view, "
            f"{miss.get('build_failed', 0):,} in builds that failed.")


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def after_rows(result: dict[str, Any]) -> tuple[list[str], list[list[Any]]] | None:
    after = result.get("after_source_compaction")
    if not after:
        return None
    names = [n for n in _names(result) if n != "reference"] + ["reference"]
    header = ["", *[("reference (real summary)" if n == "reference" else n) for n in names]]
    rows = [[label, *[(after.get(key) or {}).get(n) for n in names]] for key, label in
            (("used_later", "used-later retention"), ("used_later_mean_over_calls", "... mean over calls"),
             ("retention", "retention"), ("early_retention", "early-fact retention"),
             ("requirement_retention", "requirement_retention"), ("decision_retention", "decision_retention"))]
    return header, rows


def head_line(result: dict[str, Any]) -> str:
    fit = result.get("fit")
    fit_s = (f"fit reported = {fit['a']:,.0f} + {fit['b']:.3f}·local (median rel. err {fit['median_rel_err'] * 100:.1f} %)"
             if fit else "no reported tokens (reference = its own view, counted locally)")
    prefix = result.get("prefix") or {}
    pre_s = (f"every request +{prefix['tokens']:,} local tokens of stable prefix ({prefix.get('how')})"
             if prefix.get("tokens") else "no prefix added")
    hidden = result.get("hidden_after_compaction") or {}
    if hidden:
        pre_s += ("; after its own compaction the source's requests held more than its transcript ("
                  + ", ".join(f"{run[:8]} +{tokens:,.0f}" for run, tokens in hidden.items())
                  + " local tokens: re-attached context, the median residual of the fit; in the calibrator's pairs)")
    rules = result.get("cache_rules") or {}
    cache_s = (f"cache rules {rules.get('name')} (read {rules.get('read')}×, write {rules.get('write')}×, "
               f"≥ {rules.get('min_tokens'):,} tokens, TTL {rules.get('ttl_s'):.0f} s)") if rules else ""
    models = result.get("models") or {}
    model_s = f"; models {', '.join(f'{m} ({n:,} calls)' for m, n in models.items())}" if models else ""
    return (f"{result['source']} — W = {result['window']:,}, {result['runs']} runs, {result['calls']:,} calls; {fit_s}; "
            f"{pre_s}; tokens are provider tokens (calibrator ratio at the end {result.get('calibration_ratio')}); "
            f"{cache_s}{model_s}")


def replay_text(result: dict[str, Any], md: bool = False) -> str:
    table = markdown if md else text_table
    parts = [head_line(result), table(HEADLINE_COLUMNS, main_rows(result)), real_bill_line(result),
             *(baseline_note(result, b) for b in BASELINES), missing_line(result),
             table(FIDELITY_COLUMNS, fidelity_rows(result)), table(COST_COLUMNS, cost_rows(result))]
    after = after_rows(result)
    if after is not None:
        a = result["after_source_compaction"]
        parts.append(f"After the source's own compaction ({a['calls']} calls, {a['facts']} facts, {a['early_facts']} early):")
        parts.append(table(*after))
    if result.get("subagents"):
        from ctxagent.tui.lab.bench.subagents import replay_section_text

        parts.append(replay_section_text(result["subagents"]))
    return ("\n\n" if md else "\n").join(p for p in parts if p)


def sweep_rows(results: Sequence[dict[str, Any]], strategies: Sequence[str] = ("ctxagent", GREP, BASELINE)) -> list[list[Any]]:
    """One row per (window, strategy): the window sweep's compact table."""
    rows = []
    for r in results:
        ref = r["strategies"].get("reference") or {}
        for name in strategies:
            s = r["strategies"].get(name)
            if s is None:
                continue
            rows.append([f"{r['window']:,}", (r.get("prefix") or {}).get("mode"), name, _used(s), s["tokens_sum"],
                         _pct(s["tokens_sum"], ref.get("tokens_sum")), s.get("cost_cached"),
                         _pct(s.get("cost_cached"), ref.get("cost_cached")), s["overflows"], s.get("failed_builds"),
                         ref.get("overflows"), s.get("requirement_retention"), s.get("decision_retention"),
                         s["retention"]])
    return rows


SWEEP_COLUMNS = ("W", "prefix", "strategy", "used-later kept", "tokens_sum", "vs ref", "cost_cached", "vs ref",
                 "overflows", "failed builds", "reference overflows", "requirement_retention", "decision_retention",
                 "retention")


def sweep_text(results: Sequence[dict[str, Any]], md: bool = False) -> str:
    if not results:
        return ""
    head = (f"{results[0]['source']} at smaller windows (ctxagent and the trivial baselines; the reference is the same run; "
            "prefix auto: the source's estimated system prompt and tools in every request, product: ctxagent's own):")
    table = (markdown if md else text_table)(SWEEP_COLUMNS, sweep_rows(results))
    return f"{head}\n\n{table}" if md else f"{head}\n{table}"
