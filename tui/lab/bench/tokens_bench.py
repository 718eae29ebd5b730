"""`bench tokens`: how closely the local counter tracks the provider's reported prompt tokens.

At every call of the original run we count, with the local counter, the request the original agent
sent (its own view of the history, its own compaction applied), and compare it with the prompt
tokens the provider reported for that call:
- raw: the local count as is;
- calibrated: the product's `Calibrator` applied to the local count, after it was fed every previous
  call's (local estimate, reported usage) pair — what the gauge and the budget would have shown;
- held apart: for each long run (≥ HELD_APART_CALLS calls, when a source has 2 to HELD_APART_RUNS of
  them), a fresh calibrator is fed the other long runs, then scored online on this one (each call
  predicted before its pair is fed): the error on a session the calibrator was not fitted on;
- fit (for context, in-sample): the best affine map `a + b · local` over all calls of the source.
One calibrator per source (the product keeps one per model and it carries across sessions).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ctxagent.tui.lab.bench.metrics import fit_affine, percentile, rel_errors
from ctxagent.tui.lab.bench.readers import Trajectory
from ctxagent.tui.lab.bench.replay_setup import MODELS, REFERENCE_WINDOW, Engine, reference_views


def reference_estimates(traj: Trajectory, engine: Engine) -> list[tuple[int, float]]:
    """(reported, local estimate) for each call of the run that reported its prompt tokens."""
    return [(int(call.reported), local) for call, local, _ in reference_views(traj, engine) if call.reported]


def _calibrator(model: str) -> Any:
    from ctxagent.context.calibrator import Calibrator

    return Calibrator(model)


def _err_stats(errs: Sequence[float]) -> dict[str, Any]:
    return {"median_rel_err": round(percentile(errs, 50), 5) if errs else None,
            "p95_rel_err": round(percentile(errs, 95), 5) if errs else None}


HELD_APART_CALLS = 50
HELD_APART_RUNS = 8


def held_apart(runs: dict[str, list[tuple[int, float]]], model: str) -> dict[str, Any] | None:
    """Each long run scored by a calibrator fed only the other long runs (see the module doc)."""
    long = [r for r, pairs in runs.items() if len(pairs) >= HELD_APART_CALLS]
    if not 2 <= len(long) <= HELD_APART_RUNS:
        return None
    errs: list[float] = []
    per_run: dict[str, Any] = {}
    for run in long:
        cal = _calibrator(model)
        for other in long:
            if other != run:
                for reported, local in runs[other]:
                    cal.update(int(local), reported)
        mine = []
        for reported, local in runs[run]:
            mine.append(abs(cal.apply(int(local)) - reported) / reported)
            cal.update(int(local), reported)
        errs += mine
        per_run[run] = {"calls": len(mine), **_err_stats(mine), "intercept": round(float(cal.intercept), 1),
                        "slope": round(float(cal.slope), 5)}
    return {"runs": len(long), "calls": len(errs), **_err_stats(errs), "per_run": per_run}


def tokens_source(trajectories: Sequence[Trajectory], progress: Any = None, engine: Engine | None = None,
                  per_call: bool = False) -> dict[str, Any]:
    engine = engine or Engine.load(REFERENCE_WINDOW)
    source = trajectories[0].source if trajectories else None
    model = MODELS.get(source or "", source or "model")
    cal = _calibrator(model)  # no path: the benchmark's calibrator is never persisted over the user's
    rows: list[dict[str, Any]] = []
    skipped: Counter[str] = Counter()
    runs: dict[str, list[tuple[int, float]]] = {}
    for traj in trajectories:
        skipped.update(traj.skipped)
        runs[traj.run_id] = pairs = reference_estimates(traj, engine)
        for reported, local in pairs:
            calibrated = float(cal.apply(int(local)))
            rows.append({"run": traj.run_id, "reported": reported, "local": local, "calibrated": calibrated,
                         "ratio": round(float(cal.ratio), 5)})
            cal.update(int(local), reported)
        if progress is not None:
            progress.advance(note=traj.run_id[-40:])
    reported_all = [r["reported"] for r in rows]
    raw = rel_errors([r["local"] for r in rows], reported_all)
    calibrated_all = rel_errors([r["calibrated"] for r in rows], reported_all)
    # the first call has nothing to learn from: score the calibrator on the calls after it
    fit = fit_affine([r["local"] for r in rows], reported_all)
    out: dict[str, Any] = {
        "source": source,
        "model": model,
        "runs": len(trajectories),
        "calls": len(rows),
        "raw": _err_stats(raw),
        "calibrated": _err_stats(calibrated_all[1:]),
        "held_apart": held_apart(runs, model),
        "fit": fit.to_dict() if fit is not None else None,
        "final_ratio": rows[-1]["ratio"] if rows else None,
        "final_fit": {"intercept": round(float(cal.intercept), 1), "slope": round(float(cal.slope), 5)},
        "skipped": dict(sorted(skipped.items())),
    }
    if per_call:
        out["per_call"] = rows
    return out
