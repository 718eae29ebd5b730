"""bench fit: the grid point is chosen on one part and reported on the other; the watermarks reach the engine."""

from __future__ import annotations

from typing import Any

from ctxagent.tui.lab.bench.cache_cost import RULES
from ctxagent.tui.lab.bench.emulations import ServerParams
from ctxagent.tui.lab.bench.replay_run import ReplayPlan, run_plan
from ctxagent.tui.lab.bench.replay_setup import ReplayTotals
from ctxagent.tui.lab.bench.replay_stats import StrategyStats
from ctxagent.tui.lab.bench.watermark_fit import evaluate, folds, half_of

from .test_replay_run import runs

A, B = (1.0, 0.4), (0.6, 0.1)


def _state(cost: float, ref: float) -> dict[str, Any]:
    ours, reference = StrategyStats(tokens=[cost * 10]), StrategyStats(tokens=[ref * 10])
    ours.account.cost, reference.account.cost = cost, ref
    return ReplayTotals(strategies={"ctxagent": ours}, reference=reference).to_state()


def test_leave_one_session_out_reports_each_session_at_the_point_the_others_chose() -> None:
    ids = ["s0", "s1", "s2"]
    # B wins on s0 by a lot and loses on s1 and s2: in-sample it is best, but held apart s0 is reported at A
    per_point = {A: [_state(90, 100), _state(70, 100), _state(70, 100)],
                 B: [_state(10, 100), _state(80, 100), _state(80, 100)]}
    res = evaluate("claude-code", ids, per_point, points=(A, B))
    assert res["fitted"]["chosen"] == list(B) and res["fitted"]["cost_vs_ref"] == round(170 / 300 - 1, 4)
    assert [f["chosen"] for f in res["folds"]] == [list(A), list(B), list(B)]
    assert res["held_apart"]["cost_vs_ref"] == round((90 + 80 + 80) / 300 - 1, 4)  # worse than the fitted figure
    assert res["held_apart"]["cost_vs_ref"] > res["fitted"]["cost_vs_ref"]


def test_swe_bench_runs_split_in_two_halves_by_hash() -> None:
    ids = [f"django__django-{n}" for n in range(40)]
    (fit_a, rep_a), (fit_b, rep_b) = folds("mini-swe-agent", ids)
    assert fit_a == rep_b and fit_b == rep_a and sorted(fit_a + fit_b) == list(range(40))
    assert all(half_of(ids[i]) == half_of(ids[fit_a[0]]) for i in fit_a)
    assert 10 < len(fit_a) < 30  # a hash, not file order
    assert [f for f, _ in folds("claude-code", ["a", "b", "c"])] == [[1, 2], [0, 2], [0, 1]]


def test_the_watermarks_reach_the_engine() -> None:
    def plan(budget: dict[str, float]) -> ReplayPlan:
        return ReplayPlan(source="mini-swe-agent", window=20_000, strategies=["ctxagent"], use_memory=False,
                          rules=RULES["openai"], overhead="auto", server=ServerParams(), budget=budget)

    kept: dict[int, dict[str, Any]] = {}
    # the toy runs are short: protect only the newest step, so the slice rule has something to cut
    never = run_plan(plan({"tools_high": 50.0, "tools_low": 49.0, "protect_steps": 1}), runs(), keep=kept)  # rule off
    deep = run_plan(plan({"tools_high": 0.2, "tools_low": 0.0, "protect_steps": 1}), runs())
    assert sorted(kept) == [0, 1, 2, 3]
    assert plan({"tools_high": 0.8}).describe()["budget"] == {"tools_high": 0.8}
    assert deep["strategies"]["ctxagent"]["tokens_sum"] < never["strategies"]["ctxagent"]["tokens_sum"]
