"""Replaying the user's sessions through the bench's replay, one row per session.

The measures are the bench's, unchanged (tui/lab/bench/replay.py and the modules it names): the fit
pass over every session (the system prompt and tool schemas a transcript lacks, estimated; the
calibrator's ratio at every call, learned in session order from the reported usage), then each
session replayed on its own per strategy, and its `ReplayTotals` kept per session instead of only
added up. Two things are recorded beside them for the picture: at which calls ctxagent's build
compacted (the engine's build is wrapped, nothing else changes), and where the original run
compacted itself (its `compact_boundary` records).

Nothing is written: ctxagent's memory store and spill files live in a temporary folder per session
(the bench's replay makes and removes it), the embeddings cache of `ctxagent bench` is not used,
and the calibrators are never saved.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from typing import Any

from ctxagent.tui.lab.bench.cache_cost import DEFAULT_RULES, RULES
from ctxagent.tui.lab.bench.emulations import ServerParams
from ctxagent.tui.lab.bench.metrics import Fit
from ctxagent.tui.lab.bench.prices import Pricing
from ctxagent.tui.lab.bench.readers import Trajectory
from ctxagent.tui.lab.bench.replay import replay_trajectory, result_of
from ctxagent.tui.lab.bench.replay_run import ReplayPlan
from ctxagent.tui.lab.bench.replay_setup import (
    MODELS,
    Engine,
    ReplayTotals,
    Setup,
    calibrated_ratios,
    call_model,
    hidden_after_compaction,
    make_prefix,
    reference_pass,
    source_fit,
)
from ctxagent.tui.lab.bench.replay_stats import StrategyStats
from ctxagent.tui.lab.replay.sessions import Session

SOURCE = "claude-code"
OURS = "ctxagent"
BASELINES = ("grep", "last2+names")  # the bench's trivial baselines: a measure they also meet tells nothing
DEFAULT_STRATEGIES = (OURS, *BASELINES)
CLAUDE_CODE_WINDOW = 200_000  # Claude Code's window for Claude models unless the 1M-token option is on
REPLAY_COST = 1.5  # one call of the replay per strategy, against one call of the fit pass


class RecordingBuild:
    """The engine's build, noting at which of ctxagent's builds (one per call) it planned a compaction."""

    def __init__(self, build: Callable[..., Any]):
        self.build = build
        self.calls = 0
        self.compactions: list[int] = []

    def reset(self) -> None:
        self.calls = 0
        self.compactions = []

    def __call__(self, inputs: Any) -> Any:
        if inputs.strategy != OURS:
            return self.build(inputs)
        self.calls += 1
        result = self.build(inputs)
        if result.compactions:
            self.compactions.append(self.calls - 1)
        return result


def recording_engine(window: int) -> tuple[Engine, RecordingBuild]:
    engine = Engine.load(window)
    recorder = RecordingBuild(engine.build)
    engine.build = recorder
    return engine, recorder


def main_model(trajectories: Sequence[Trajectory]) -> str:
    """The model of most calls: costs are in its prices (each call is weighted by its own model's)."""
    counts = Counter(call_model(c, SOURCE) for t in trajectories for c in t.calls)
    return counts.most_common(1)[0][0] if counts else MODELS[SOURCE]


def default_window(trajectories: Sequence[Trajectory]) -> tuple[int, str]:
    """The window the sessions ran with: Claude Code's 200k, unless a call's prompt was larger (the 1M option
    was on: then the registry's window of the main model)."""
    from ctxagent.agent.providers.registry import model_info

    model = main_model(trajectories)
    info = model_info("anthropic", model)
    registry = info.window if info.known else None
    largest = max((c.reported or 0 for t in trajectories for c in t.calls), default=0)
    if registry is not None and registry > CLAUDE_CODE_WINDOW and largest > CLAUDE_CODE_WINDOW:
        return registry, f"{model}'s window in the registry (a call's prompt exceeded {CLAUDE_CODE_WINDOW:,})"
    if registry is not None and registry <= CLAUDE_CODE_WINDOW:
        return registry, f"{model}'s window in the registry"
    if registry is not None:
        return CLAUDE_CODE_WINDOW, (f"Claude Code's usual window for {model} (the registry's {registry:,} is the "
                                    "model's largest, which no call here needed)")
    return CLAUDE_CODE_WINDOW, f"{model} is not in the registry: Claude Code's usual window"


@dataclass
class Options:
    window: int
    strategies: list[str]
    main: str
    use_memory: bool = True

    def plan(self) -> ReplayPlan:
        return ReplayPlan(source=SOURCE, window=self.window, strategies=list(self.strategies),
                          use_memory=self.use_memory, rules=RULES[DEFAULT_RULES[SOURCE]], overhead="auto",
                          server=ServerParams())


@dataclass
class SessionResult:
    session: Session
    totals: ReplayTotals
    compactions: list[int]  # call indexes (from 0) whose build compacted, ctxagent's
    seconds: float = 0.0

    @property
    def source_compactions(self) -> list[int]:
        """Call indexes (from 0) right after each of the original run's own compactions."""
        out, calls = [], 0
        at = {c.position for c in self.session.traj.calls}
        for pos, ev in enumerate(self.session.traj.events):
            if ev.kind == "source_compaction":
                out.append(calls)
            if pos in at:
                calls += 1
        return out


@dataclass
class Replay:
    options: Options
    results: list[SessionResult]
    summary: dict[str, Any]  # the bench's JSON shape, over every session
    fit: Fit | None
    notes: list[str] = field(default_factory=list)


def make_setup(options: Options, fit: Fit | None, engine: Engine) -> Setup:
    plan = options.plan()
    prefix = make_prefix(plan.overhead, fit, engine.counter)
    return Setup(engine, list(plan.strategies), prefix, plan.rules, plan.server, Pricing(options.main),
                 plan.use_memory, prefix, None)


# -- the worker side (--jobs > 1) ------------------------------------------------------------------
_WORKER: dict[str, Any] = {}


def _worker_engine(window: int) -> tuple[Engine, RecordingBuild]:
    if _WORKER.get("window") != window:
        _WORKER["engine"], _WORKER["recorder"] = recording_engine(window)
        _WORKER["window"] = window
    return _WORKER["engine"], _WORKER["recorder"]


def _fit_task(window: int, index: int, traj: Trajectory) -> tuple[int, list[tuple[float, bool]]]:
    engine, _ = _worker_engine(window)
    return index, reference_pass(traj, engine)


def _run_task(options: Options, fit: dict[str, Any] | None, index: int, traj: Trajectory, ratios: list[float],
              ref_locals: list[float]) -> tuple[int, dict[str, Any], list[int], float]:
    engine, recorder = _worker_engine(options.window)
    key = repr((asdict(options), fit))
    if _WORKER.get("setup_key") != key:
        _WORKER["setup"] = make_setup(options, Fit(**fit) if fit else None, engine)
        _WORKER["setup_key"] = key
    return _replay_one(_WORKER["setup"], recorder, index, traj, ratios, ref_locals)


def _replay_one(setup: Setup, recorder: RecordingBuild, index: int, traj: Trajectory, ratios: list[float],
                ref_locals: list[float], on_call: Any = None) -> tuple[int, dict[str, Any], list[int], float]:
    recorder.reset()
    t0 = time.perf_counter()
    totals = replay_trajectory(traj, setup, ratios, ref_locals, on_call=on_call)
    return index, totals.to_state(), list(recorder.compactions), time.perf_counter() - t0


def _drain(pending: dict[Future[Any], int], done: Callable[[Any], None]) -> None:
    while pending:
        finished, _ = wait(list(pending), timeout=15.0, return_when=FIRST_COMPLETED)
        for fut in finished:
            pending.pop(fut)
            done(fut.result())


# -- the parent side -------------------------------------------------------------------------------
def replay_sessions(sessions: Sequence[Session], options: Options, jobs: int = 1, progress: Any = None) -> Replay:
    trajs = [s.traj for s in sessions]
    n_calls = [len(t.calls) for t in trajs]
    engine, recorder = recording_engine(options.window)
    if progress is not None and hasattr(progress, "plan"):
        progress.plan([("replay", sum(n_calls), REPLAY_COST * len(options.strategies))])
        progress.phase("fit pass", sum(n_calls), 1.0)
    jobs = max(1, min(int(jobs), len(trajs)))
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) if jobs > 1 else None
    passes: dict[int, list[tuple[float, bool]]] = {}
    states: dict[int, tuple[dict[str, Any], list[int], float]] = {}

    def fit_done(item: tuple[int, list[tuple[float, bool]]]) -> None:
        passes[item[0]] = item[1]
        if progress is not None:
            progress.advance(n_calls[item[0]], note=sessions[item[0]].file.session[:40])

    def run_done(item: tuple[int, dict[str, Any], list[int], float], counted: bool = False) -> None:
        i, state, compactions, seconds = item
        states[i] = (state, compactions, seconds)
        if progress is not None:
            progress.advance(0 if counted else n_calls[i], note=sessions[i].file.session[:40])

    try:
        if pool is None:
            for i, t in enumerate(trajs):
                fit_done((i, reference_pass(t, engine)))
        else:
            _drain({pool.submit(_fit_task, options.window, i, t): i for i, t in enumerate(trajs)}, fit_done)
        ordered = [passes[i] for i in range(len(trajs))]
        fit = source_fit(trajs, engine, ordered)
        setup = make_setup(options, fit, engine)
        hidden = hidden_after_compaction(trajs, ordered, fit, engine)
        ratios, final = calibrated_ratios(trajs, ordered, setup.ref_prefix, engine, hidden)
        if progress is not None and hasattr(progress, "phase"):
            progress.phase("replay", sum(n_calls), REPLAY_COST * len(options.strategies))
        if pool is None:
            step = (lambda: progress.advance(1)) if progress is not None else None
            for i, t in enumerate(trajs):
                run_done(_replay_one(setup, recorder, i, t, ratios[i], [r for r, _ in ordered[i]], step), counted=True)
        else:
            fit_state = asdict(fit) if fit is not None else None
            order = sorted(range(len(trajs)), key=lambda i: -n_calls[i])  # the longest first: the pool ends together
            _drain({pool.submit(_run_task, options, fit_state, i, trajs[i], ratios[i], [r for r, _ in ordered[i]]): i
                    for i in order}, run_done)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    results = [SessionResult(s, ReplayTotals.from_state(states[i][0]), states[i][1], states[i][2])
               for i, s in enumerate(sessions)]
    merged = ReplayTotals(strategies={name: StrategyStats() for name in options.strategies})
    for r in results:
        merged.merge(r.totals)
    skipped: dict[str, int] = {}
    for t in trajs:
        for k, v in t.skipped.items():
            skipped[k] = skipped.get(k, 0) + v
    summary = result_of(options.plan(), setup, merged, fit, setup.prefix, setup.ref_prefix, final, skipped,
                        {t.run_id: h for t, h in zip(trajs, hidden, strict=True) if h})
    return Replay(options, results, summary, fit)
