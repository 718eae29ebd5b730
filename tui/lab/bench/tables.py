"""Plain-text / Markdown tables for benchmark results (the same rows serve the terminal and the docs).
The replay's own tables are in replay_tables.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        return f"{v:.3f}".rstrip("0").rstrip(".") if v != int(v) else f"{int(v)}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def markdown(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_fmt(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def text_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [list(header)] + [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(str(r[i])) for r in cells) for i in range(len(header))]
    out = ["  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
           for r in cells]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def tokens_text(result: dict[str, Any], md: bool = False) -> str:
    rows = [[result["source"], result["model"], result["calls"],
             _pct(result["raw"]["median_rel_err"]), _pct(result["raw"]["p95_rel_err"]),
             _pct(result["calibrated"]["median_rel_err"]), _pct(result["calibrated"]["p95_rel_err"]),
             _pct((result.get("held_apart") or {}).get("median_rel_err")),
             _pct((result.get("held_apart") or {}).get("p95_rel_err")),
             _pct((result.get("fit") or {}).get("median_rel_err")), _final_fit(result)]]
    header = ("source", "model", "calls", "raw median", "raw p95", "calibrated median", "calibrated p95",
              "held-apart median", "held-apart p95", "affine fit median (in-sample)", "final fit")
    return (markdown if md else text_table)(header, rows)


def _final_fit(result: dict[str, Any]) -> str | None:
    fit = result.get("final_fit")
    if not fit:
        return str(result["final_ratio"]) if result.get("final_ratio") is not None else None
    return f"{fit['intercept']:,.0f} + {fit['slope']:.3f} ×"


def _pct(v: float | None) -> str | None:
    return None if v is None else f"{v * 100:.1f} %"


def perf_text(result: dict[str, Any], md: bool = False) -> str:
    fn = markdown if md else text_table
    parts = []
    b = result.get("builder") or []
    if b:
        parts.append(fn(("history tokens", "events", "build ms / step", "build p95 ms", "re-tokenize ms", "ratio"),
                        [[r["history_tokens"], r["events"], r["build_ms"], r.get("build_p95_ms"), r["retokenize_ms"],
                          f"{r['ratio']}×" if r["ratio"] else None] for r in b]))
    m = result.get("memory_search") or []
    if m:
        rows = []
        for r in m:
            for mode in ("bm25", "hybrid"):
                x = r.get(mode)
                if x is None:
                    continue
                if "skipped" in x:
                    rows.append([r["records"], mode, None, None, None, None, None, x["skipped"]])
                    continue
                rows.append([r["records"], mode, x["queries"], x["p50_ms"], x["p95_ms"], x["first_p50_ms"], x["first_p95_ms"],
                             r["write_s"]])
        parts.append(fn(("records", "mode", "queries", "search p50 ms", "search p95 ms", "first-time p50 ms",
                         "first-time p95 ms", "write s"), rows))
    red = result.get("redaction") or []
    if red:
        parts.append(fn(("redaction input", "chars", "ms", "chars/s", "slowest shape"),
                        [[r["input"], r["chars"], r["ms"], r["chars_per_s"], r.get("slowest", "")] for r in red]))
    v, f = result.get("version") or {}, result.get("tui_first_frame") or {}
    start_rows = []
    if v:
        start_rows.append(["`ctxagent --version`", v.get("p50_ms"), v.get("output", "")])
    if f:
        start_rows.append(["TUI first frame", f.get("p50_ms"), f.get("skipped") or f"first screen: {f.get('first_screen')}"])
    if start_rows:
        parts.append(fn(("start-up", "wall ms (p50)", "note"), start_rows))
    return "\n\n".join(parts)
