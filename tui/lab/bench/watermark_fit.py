"""`ctxagent bench fit`: the relief constants, fitted on one part of the traffic and reported on the other.

The constants (`--sweep`): `Budget.tools_high` / `tools_low` (context/budget.py), where slice relief starts
and how far it cuts — the two a prompt cache's price depends on — or `Budget.protect_steps`, how many of
the newest steps' tool traffic stays verbatim, or `Budget.step_chunk`, how many steps (× protect_steps)
age into a cut at a time (each cut re-writes the history after it). Each point of a small grid is replayed once (the
ctxagent strategy and the reference, every run of the source), and the runs' results are split:

- **Claude Code**: leave one session out. For each session, the grid point with the lowest cached cost
  against the reference on the *other* sessions is chosen, and this session is reported at it; the
  held-apart figure pools the sessions so reported.
- **the SWE-bench sources** (mini-swe-agent, SWE-agent, OpenHands): two halves by the hash of the run's
  id; the point best on one half is reported on the other, both ways round, pooled.

The *fitted* figure is the point best on all the runs, reported on those same runs (in-sample): the
figure a constant chosen on the data that measures it gives. The objective is ctxagent's cached cost
against the reference's, both simulated with the same cache rules (like-for-like); tokens, used-later
retention and overflows are reported beside it. The memory-search constants are fitted apart, on LoCoMo's
development conversations (locomo_fit.py), and reported on the held-out ones (docs/BENCHMARKS.md §4).
"""

from __future__ import annotations

import argparse
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxagent.context.budget import (
    DEFAULT_PROTECT_STEPS,
    DEFAULT_STEP_CHUNK,
    DEFAULT_TOOLS_HIGH,
    DEFAULT_TOOLS_LOW,
)

GRID: tuple[tuple[float, ...], ...] = ((1.0, 0.4), (0.8, 0.2), (0.6, 0.1), (0.45, 0.0))
# what `--sweep` fits: the Budget fields, their grid, and the product's defaults
SWEEPS: dict[str, tuple[tuple[str, ...], tuple[tuple[float, ...], ...], tuple[float, ...]]] = {
    "watermarks": (("tools_high", "tools_low"), GRID, (DEFAULT_TOOLS_HIGH, DEFAULT_TOOLS_LOW)),
    "protect_steps": (("protect_steps",), ((4,), (8,), (12,)), (DEFAULT_PROTECT_STEPS,)),
    "step_chunk": (("step_chunk",), ((1.0,), (2.0,), (3.0,), (4.0,), (6.0,)), (DEFAULT_STEP_CHUNK,)),
}
STRATEGY = "ctxagent"


@dataclass(frozen=True)
class PartScore:
    """One grid point on one set of runs."""

    cost: float
    ref_cost: float
    tokens: float
    ref_tokens: float
    used_strings: int
    used_kept: int
    overflows: int

    @property
    def cost_vs_ref(self) -> float:
        return self.cost / self.ref_cost - 1.0 if self.ref_cost else 0.0

    def plus(self, other: PartScore) -> PartScore:
        return PartScore(self.cost + other.cost, self.ref_cost + other.ref_cost, self.tokens + other.tokens,
                         self.ref_tokens + other.ref_tokens, self.used_strings + other.used_strings,
                         self.used_kept + other.used_kept, self.overflows + other.overflows)

    def to_dict(self) -> dict[str, Any]:
        return {"cost_vs_ref": round(self.cost_vs_ref, 4),
                "tokens_vs_ref": round(self.tokens / self.ref_tokens - 1.0, 4) if self.ref_tokens else None,
                "used_later": round(self.used_kept / self.used_strings, 4) if self.used_strings else None,
                "overflows": self.overflows, "cost": round(self.cost), "ref_cost": round(self.ref_cost)}


def score(states: Sequence[dict[str, Any]]) -> PartScore:
    """A grid point's score over some runs (their per-run totals, replay_run.py's partial records)."""
    from ctxagent.tui.lab.bench.replay_setup import ReplayTotals
    from ctxagent.tui.lab.bench.replay_stats import StrategyStats

    totals = ReplayTotals(strategies={STRATEGY: StrategyStats()})
    for st in states:
        totals.merge(ReplayTotals.from_state(st))
    ours, ref = totals.strategies[STRATEGY], totals.reference
    return PartScore(ours.account.cost, ref.account.cost, sum(ours.tokens) + ours.extra_tokens, sum(ref.tokens),
                     ours.used.strings, ours.used.kept, ours.overflows)


def half_of(run_id: str) -> int:
    """0 or 1: a run's half, by the hash of its id (the same on every machine)."""
    return int(hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()[:8], 16) % 2


def folds(source: str, run_ids: Sequence[str]) -> list[tuple[list[int], list[int]]]:
    """(fit on, report on) index lists: leave one session out for Claude Code, hashed halves otherwise."""
    n = len(run_ids)
    if source == "claude-code":
        return [([j for j in range(n) if j != i], [i]) for i in range(n)]
    halves = [[i for i in range(n) if half_of(run_ids[i]) == h] for h in (0, 1)]
    return [(halves[0], halves[1]), (halves[1], halves[0])] if all(halves) else [(list(range(n)), list(range(n)))]


def best(points: Sequence[tuple[float, ...]], per_point: dict[tuple[float, ...], list[dict[str, Any]]],
         runs: Sequence[int]) -> tuple[float, ...]:
    """The grid point with the lowest cached cost against the reference over `runs` (ties: the earlier point)."""
    return min(points, key=lambda p: (score([per_point[p][i] for i in runs]).cost_vs_ref, points.index(p)))


def evaluate(source: str, run_ids: Sequence[str], per_point: dict[tuple[float, ...], list[dict[str, Any]]],
             points: Sequence[tuple[float, ...]] = GRID,
             default: tuple[float, ...] = (DEFAULT_TOOLS_HIGH, DEFAULT_TOOLS_LOW)) -> dict[str, Any]:
    """The fitted (in-sample) and held-apart figures from every point's per-run totals."""
    everything = list(range(len(run_ids)))
    fitted = best(points, per_point, everything)
    held: PartScore | None = None
    chosen: list[dict[str, Any]] = []
    for fit_on, report_on in folds(source, run_ids):
        p = best(points, per_point, fit_on)
        part = score([per_point[p][i] for i in report_on])
        held = part if held is None else held.plus(part)
        chosen.append({"report_on": [run_ids[i] for i in report_on] if source == "claude-code" else len(report_on),
                       "chosen": list(p), **part.to_dict()})
    return {
        "source": source, "runs": len(run_ids), "grid": [list(p) for p in points],
        "split": "leave one session out" if source == "claude-code" else "two halves by the hash of the run id",
        "points": {"/".join(map(str, p)): score([per_point[p][i] for i in everything]).to_dict() for p in points},
        "fitted": {"chosen": list(fitted), **score([per_point[fitted][i] for i in everything]).to_dict()},
        "held_apart": held.to_dict() if held is not None else None,
        "folds": chosen,
        "default": list(default),
        "default_in_sample": (score([per_point[default][i] for i in everything]).to_dict()
                              if default in per_point else None),
    }


def run_fit(args: argparse.Namespace) -> int:
    from ctxagent.context.floor.display import echo, echo_json
    from ctxagent.tui.lab.bench.cache_cost import RULES
    from ctxagent.tui.lab.bench.emulations import ServerParams
    from ctxagent.tui.lab.bench.options import DEFAULT_WINDOWS, job_count, memory_store, write_atomically
    from ctxagent.tui.lab.bench.progress import Progress
    from ctxagent.tui.lab.bench.readers import read_source
    from ctxagent.tui.lab.bench.replay_run import ReplayPlan, run_plan

    source = args.source
    window = args.window or DEFAULT_WINDOWS[source]
    read = read_source(source, args.data, args.limit)
    trajs = read.trajectories
    run_ids = [t.run_id for t in trajs]
    out_dir = Path(args.out_dir) if args.out_dir else None
    per_point: dict[tuple[float, ...], list[dict[str, Any]]] = {}
    names, grid, default = SWEEPS[args.sweep]
    for point in grid:
        plan = ReplayPlan(source=source, window=window, strategies=[STRATEGY], use_memory=True,
                          rules=RULES["anthropic" if source == "claude-code" else "openai"], overhead="auto",
                          server=ServerParams(), memory_store=memory_store(args),
                          budget=dict(zip(names, point, strict=True)))
        tag = "-".join(map(str, point))
        partial = out_dir / f"fit-{source}-{window}-{args.sweep}-{tag}.partial.jsonl" if out_dir else None
        if partial is not None and args.fresh and partial.exists():
            partial.unlink()
        kept: dict[int, dict[str, Any]] = {}
        with Progress(len(trajs), f"fit {source} W={window:,} {'/'.join(names)} {'/'.join(map(str, point))}") as bar:
            run_plan(plan, list(trajs), jobs=job_count(args), progress=bar, partial=partial, keep=kept)
        per_point[point] = [kept[i] for i in range(len(trajs))]
    result = evaluate(source, run_ids, per_point, grid, default)
    result["window"] = window
    result["constants"] = list(names)
    if out_dir is not None:
        import json

        write_atomically(out_dir / f"fit-{source}-{window}-{args.sweep}.json", json.dumps(result, indent=2) + "\n")
    if args.json:
        echo_json(result, indent=2)
    else:
        echo(fit_text(result))
    return 0


def fit_text(result: dict[str, Any]) -> str:
    from ctxagent.tui.lab.bench.tables import markdown

    def pct(v: float | None) -> str:
        return "–" if v is None else f"{v * 100:+.1f} %"

    rows = [[p, pct(s["tokens_vs_ref"]), pct(s["cost_vs_ref"]), s["used_later"], s["overflows"]]
            for p, s in result["points"].items()]
    f, h = result["fitted"], result["held_apart"]
    chosen = ", ".join(f"{'/'.join(map(str, c['chosen']))}" for c in result["folds"])
    names = "/".join(result.get("constants", ["tools_high", "tools_low"]))
    head = (f"{result['source']} — W = {result['window']:,}, {result['runs']} runs; {names} fitted "
            f"({result['split']}); objective: cached cost vs the reference (like-for-like)")
    summary = markdown(["figure", names, "tokens vs ref", "cost_cached vs ref", "used-later", "overflows"], [
        ["fitted (in-sample)", "/".join(map(str, f["chosen"])), pct(f["tokens_vs_ref"]), pct(f["cost_vs_ref"]),
         f["used_later"], f["overflows"]],
        ["held apart", chosen, pct(h["tokens_vs_ref"]), pct(h["cost_vs_ref"]), h["used_later"], h["overflows"]],
    ])
    return f"{head}\n\n{markdown([f'{names} (all runs)', 'tokens vs ref', 'cost_cached vs ref', 'used-later', 'overflows'], rows)}\n\n{summary}"


def add_parser(sub: Any) -> None:
    from ctxagent.tui.lab.bench.options import csv_ints, replay_options

    q = sub.add_parser("fit", help="the relief watermarks fitted on one part of the traffic, reported on the other")
    q.add_argument("--source", default="claude-code", help="claude-code (leave one session out), or a SWE-bench "
                                                         "source (hashed halves)")
    q.add_argument("--limit", type=int, help="a stable sample of K runs (chosen by hash)")
    q.add_argument("--sweep", default="watermarks", choices=sorted(SWEEPS),
                   help="the constants to fit: the relief watermarks (tools_high/tools_low), protect_steps or "
                        "step_chunk")
    q.add_argument("--window", type=lambda t: csv_ints(t)[0], help="window W (default: the source's)")
    q.add_argument("--data", help="bench data root or a source's folder/file")
    q.add_argument("--json", action="store_true", help="print JSON instead of tables")
    q.add_argument("--out-dir", help="per-run results stream here (a re-run resumes) and the JSON is written here")
    replay_options(q)
    q.set_defaults(func=run_fit)
