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
from ctxagent.context.build.dispatch import build, request_sha256
from ctxagent.context.build.inputs import BuildInputs, BuildResult
from ctxagent.context.errors import HistoryError
from ctxagent.context.events import SystemPromptData
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
    reports = [e for e in events if e.kind == "context_report"]
    for e in reports:
        if e.context_report.step == step:
            return e
    steps = [e.context_report.step for e in reports]
    raise HistoryError(f"no step {step} in this session (steps 1–{max(steps, default=0)})")


def rebuild_step(events: list[Event], step: int) -> InspectedStep:
    rep_ev = _step_event(events, step)
    rep = rep_ev.context_report
    prefix = events[: rep_ev.id]
    system_ev = next((e for e in reversed(prefix) if e.kind == "system_prompt"), None)
    if system_ev is None:
        raise HistoryError("the log has no system_prompt event before this step")
    params = rep.build
    if not params.window:
        raise HistoryError(f"step {step} was logged without its build parameters; it cannot be rebuilt")
    slice_rule = {k: v for k in ("tools_high", "tools_low", "protect_steps") if (v := getattr(params, k)) is not None}
    budget = Budget(params.window, fractions=params.fractions, max_output=params.max_output, profile=params.profile, **slice_rule)
    system = system_ev.as_(SystemPromptData)
    tools = [ToolSpec(t["name"], t["description"], t["input_schema"]) for t in system.tools]
    report = rep.report
    result = build(
        BuildInputs(
            events=prefix,
            system=system.text,
            tools=tools,
            budget=budget,
            counter=CachedCounter(get_counter(params.tokenizer)),
            step=step,
            turn=int(report.get("turn", 0)),
            strategy=params.strategy,
            calibration_ratio=rep.calibration_ratio,
            warm_override=rep.warm,
            summarize=None,
            allow_compaction=False,
            protect_turns=params.protect_turns,
            thresholds=params.thresholds,
            model=rep.model,
        )
    )
    provider = make_provider(rep.model, api_key="inspect", base_url="http://127.0.0.1:9", max_tokens=budget.max_output)
    body = provider.body(result.request)
    verified = request_sha256(body) == rep.request_sha256
    masked = [[e.compaction.first_id, e.compaction.last_id] for e in prefix if e.kind == "compaction"]
    return InspectedStep(step, body, result, report, verified, masked)
