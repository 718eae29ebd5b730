"""Rebuild the exact request a past step sent, from the session log alone (what `ctxagent inspect` shows).

Each step's `context_report` event records the build parameters, the warm block text and the
calibration ratio (context/builder/step.py writes it); the `system_prompt` event before it records the
stable prefix. The builder is a pure function, so re-running it on the log prefix gives the same
request; the stored sha256 of the body that was sent proves it (`verified`). The body is the
provider's wire body when the step was recorded with one: pass the same function as `body`; and whether
the step's model takes images (a model that takes none was sent stubs) by the rule the agent used: pass
it as `images` (the agent's is agent/providers/registry.py `takes_images`; this layer has no registry).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ctxagent.context.builder.dispatch import build, request_sha256
from ctxagent.context.builder.inputs import BuildInputs, BuildResult
from ctxagent.context.builder.step import request_body
from ctxagent.context.errors import HistoryError
from ctxagent.context.events import ContextReportData, SystemPromptData
from ctxagent.context.history import Event
from ctxagent.context.request import Request, ToolSpec
from ctxagent.context.tokens import CachedCounter, get_counter

# (the step's model label as logged, the rebuilt request) -> the body whose sha256 the step logged
BodyFor = Callable[[str, Request], dict[str, Any]]


def neutral_body(_model: str, request: Request) -> dict[str, Any]:
    """The body `build_step` hashes by default (`request_body`: the provider-neutral one)."""
    return request_body(request)


@dataclass
class RebuiltStep:
    step: int
    body: dict[str, Any]
    result: BuildResult
    report: dict[str, Any]  # the report as logged
    verified: bool  # the rebuilt body has the logged sha256
    masked: list[list[int]]  # [first_id, last_id] of every compaction before the step


def step_event(events: list[Event], step: int) -> Event:
    """The `context_report` event of `step` (a HistoryError naming the steps there are)."""
    reports = [e for e in events if e.kind == ContextReportData.KIND]
    for e in reports:
        if e.context_report.step == step:
            return e
    steps = [e.context_report.step for e in reports]
    raise HistoryError(f"no step {step} in this session (steps 1–{max(steps, default=0)})")


def rebuild_step(events: list[Event], step: int, body: BodyFor = neutral_body,
                 images: Callable[[str], bool] | None = None) -> RebuiltStep:
    """`step` rebuilt from the log; `images(model label)`: whether that model takes images (None: it does)."""
    rep_ev = step_event(events, step)
    rep = rep_ev.context_report
    prefix = events[: rep_ev.id]
    system_ev = next((e for e in reversed(prefix) if e.kind == SystemPromptData.KIND), None)
    if system_ev is None:
        raise HistoryError("the log has no system_prompt event before this step")
    if not rep.build.window:
        raise HistoryError(f"step {step} was logged without its build parameters; it cannot be rebuilt")
    system = system_ev.as_(SystemPromptData)
    inputs = BuildInputs.from_params(
        rep.build, events=prefix, system=system.text,
        tools=[ToolSpec(t["name"], t["description"], t["input_schema"]) for t in system.tools],
        counter=CachedCounter(get_counter(rep.build.tokenizer)), step=step, turn=int(rep.report.get("turn", 0)),
        calibration_ratio=rep.calibration_ratio, warm_override=rep.warm, model=rep.model,
        images=images(rep.model) if images is not None else True,
    )
    result = build(inputs)
    sent = body(rep.model, result.request)
    masked = [[e.compaction.first_id, e.compaction.last_id] for e in prefix if e.kind == "compaction"]
    return RebuiltStep(step, sent, result, rep.report, request_sha256(sent) == rep.request_sha256, masked)
