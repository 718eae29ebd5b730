"""Rebuild the exact request a past step sent, from the session log alone.

Each step's `context_report` event records the build parameters, the warm block text and the
calibration ratio; the `system_prompt` event before it records the stable prefix. The builder is a
pure function, so re-running it on the log prefix gives the same request; the stored sha256 proves
it (`verified`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ctxagent.agent.providers.registry import make_provider
from ctxagent.context.budget import Budget
from ctxagent.context.builder import BuildInputs, BuildResult, build, request_sha256
from ctxagent.context.errors import HistoryError
from ctxagent.context.history import Event
from ctxagent.context.request import ToolSpec
from ctxagent.context.tokens import CachedCounter, get_counter


@dataclass
class InspectedStep:
    step: int
    body: dict[str, Any]
    result: BuildResult
    report: dict[str, Any]
    verified: bool
    masked: list[list[int]]


def _step_event(events: list[Event], step: int) -> Event:
    for e in events:
        if e.kind == "context_report" and int(e.data.get("step", -1)) == step:
            return e
    steps = [int(e.data.get("step", 0)) for e in events if e.kind == "context_report"]
    raise HistoryError(f"no step {step} in this session (steps 1–{max(steps, default=0)})")


def rebuild_step(events: list[Event], step: int) -> InspectedStep:
    rep = _step_event(events, step)
    prefix = events[: rep.id]
    system_ev = next((e for e in reversed(prefix) if e.kind == "system_prompt"), None)
    if system_ev is None:
        raise HistoryError("the log has no system_prompt event before this step")
    params = rep.data.get("build") or {}
    slice_rule = {k: params[k] for k in ("tools_high", "tools_low", "protect_steps") if k in params}
    budget = Budget(
        int(params["window"]), fractions=params["fractions"], max_output=int(params["max_output"]),
        profile=params.get("profile", "default"), **slice_rule,
    )
    tools = [ToolSpec(t["name"], t["description"], t["input_schema"]) for t in system_ev.data.get("tools", [])]
    thresholds = params.get("thresholds", [0.75, 0.90])
    report = rep.data["report"]
    result = build(
        BuildInputs(
            events=prefix,
            system=system_ev.data["text"],
            tools=tools,
            budget=budget,
            counter=CachedCounter(get_counter(params.get("tokenizer", "o200k_base"))),
            step=step,
            turn=int(report.get("turn", 0)),
            strategy=params.get("strategy", "ctxagent"),
            calibration_ratio=float(rep.data.get("calibration_ratio", 1.0)),
            warm_override=rep.data.get("warm", ""),
            summarize=None,
            allow_compaction=False,
            protect_turns=int(params.get("protect_turns", 2)),
            thresholds=(float(thresholds[0]), float(thresholds[1])),
        )
    )
    provider = make_provider(rep.data["model"], api_key="inspect", base_url="http://127.0.0.1:9", max_tokens=budget.max_output)
    body = provider.body(result.request)
    verified = request_sha256(body) == rep.data.get("request_sha256")
    masked = [[int(e.data["first_id"]), int(e.data["last_id"])] for e in prefix if e.kind == "compaction"]
    return InspectedStep(step, body, result, report, verified, masked)
