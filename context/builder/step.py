"""One step of a session, for any caller of the builder: build the next request from the log and
record what was built, so that `rebuild_step` (context/builder/rebuild.py) can prove it later from the
log alone.

    setup = StepSetup(system=..., tools=..., budget=..., counter=..., model="anthropic:…")
    record_system_prompt(log, setup.system, setup.tools)    # once, and whenever either changes
    recorded = build_step(log, setup, body=provider.body)   # the compactions + a context_report, logged
    send(recorded.body)

`build_step` builds the next request (`context.builder.dispatch.build`), then appends, in order, the
compactions the build planned (with the event ids it planned for them) and one `context_report` event:
the report, the sha256 of the request body as sent, the warm text, the calibration ratio and the
`BuildParams`. `build_next` builds without recording anything (a preview); `record_step` records
a build made by `build_next`.

When the provider refuses a request as too long, it counts more than the calibrated estimate said:
`refused_ratio` is the calibration that learns that for the retry, so the builder's own relief (its
tiers, its planned compactions) makes the retried request fit, logged like any step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ctxagent.context.budget import TASK_STATE_SHARE, Budget
from ctxagent.context.builder.cache import BuildCache, cache_for
from ctxagent.context.builder.dispatch import build, request_sha256
from ctxagent.context.builder.inputs import BuildInputs, BuildResult, WarmProvider
from ctxagent.context.builder.relief_price import ReliefPrice, relief_price
from ctxagent.context.events import BuildParams, ContextReportData, SystemPromptData
from ctxagent.context.history import Event, SessionLog
from ctxagent.context.monitor import DEFAULT_THRESHOLDS
from ctxagent.context.prompt_cache import rules_for
from ctxagent.context.request import Request, ToolSpec
from ctxagent.context.tokens import TokenCounter

Body = Callable[[Request], dict[str, Any]]  # the body a request is sent as (a provider's `body`)
Builder = Callable[[BuildInputs], BuildResult]

# After a "prompt is too long" refusal the provider is known to count at least the limit for what was
# sent; the retry aims this much lower still, since by how much it was over is not known.
REFUSAL_MARGIN = 1.1


def request_body(request: Request) -> dict[str, Any]:
    """The provider-neutral body (`Request.to_dict()`): the default when no wire body is given."""
    return request.to_dict()


@dataclass
class StepSetup:
    """What stays the same from one step of a session to the next."""

    system: str  # the system prompt, project instructions included
    tools: list[ToolSpec]
    budget: Budget
    counter: TokenCounter
    model: str = ""  # "provider:model"; a step for another model than the last one's meets a cold cache
    strategy: str = "ctxagent"
    protect_turns: int = 2
    thresholds: tuple[float, float] = DEFAULT_THRESHOLDS
    tokenizer: str | None = None  # the counter's family as configured, recorded (default: the counter's name)
    warm: WarmProvider | None = None
    summarize: Callable[[str], str] | None = None  # a model call for compaction summaries; None = extractive
    cache: BuildCache | None = None  # keep one per session: a step then costs O(new content)
    task_state_share: float = TASK_STATE_SHARE
    cache_ttl: str = "5m"  # the prompt cache's TTL option (context/prompt_cache.py)
    images: bool = True  # the model takes images (agent/providers/registry.py takes_images); False: text stubs

    def params(self) -> BuildParams:
        """The scalars a step records so that it can be rebuilt (`BuildInputs.params`)."""
        return self.inputs([], step=0, turn=0).params(self.tokenizer)

    def inputs(self, events: list[Event], *, step: int, turn: int, calibration_ratio: float = 1.0,
               allow_compaction: bool = True) -> BuildInputs:
        return BuildInputs(
            events=events, system=self.system, tools=self.tools, budget=self.budget, counter=self.counter,
            step=step, turn=turn, strategy=self.strategy, calibration_ratio=calibration_ratio, warm=self.warm,
            summarize=self.summarize, allow_compaction=allow_compaction, protect_turns=self.protect_turns,
            thresholds=self.thresholds, model=self.model, cache=self.cache, task_state_share=self.task_state_share,
            cache_ttl=self.cache_ttl,
            images=self.images,
        )


@dataclass(frozen=True)
class RecordedStep:
    """A step built and recorded: its result, the events appended for it, and the body to send."""

    result: BuildResult
    compactions: list[Event]  # the compaction events appended, in order (usually none)
    report: Event  # the context_report event
    body: dict[str, Any]  # the request as `body` made it: what was hashed, what to send


def record_system_prompt(log: SessionLog, system: str, tools: list[ToolSpec]) -> Event | None:
    """Log the stable prefix (system prompt and tool schemas) when it differs from the last one
    logged, so that every later step can be rebuilt; returns the event, or None when unchanged."""
    prompt = SystemPromptData(text=system, tools=[{"name": t.name, "description": t.description,
                                                   "input_schema": t.input_schema} for t in tools])
    last = next((e for e in reversed(log.events) if e.kind == SystemPromptData.KIND), None)
    if last is not None and last.as_(SystemPromptData).to_data() == prompt.to_data():
        return None
    return log.append(prompt)


def next_step(log: SessionLog) -> int:
    """The number the next step gets: steps are numbered 1, 2, … in request order across the session."""
    return len(log.of_kind(ContextReportData.KIND)) + 1


def build_next(log: SessionLog, setup: StepSetup, *, step: int | None = None, turn: int | None = None,
               calibration_ratio: float = 1.0, allow_compaction: bool = True, builder: Builder = build) -> BuildResult:
    """Build the next request without recording it. Raises ContextOverflowError when even the
    relieved history cannot fit."""
    inputs = setup.inputs(log.events, step=next_step(log) if step is None else step,
                          turn=log.turn if turn is None else turn, calibration_ratio=calibration_ratio,
                          allow_compaction=allow_compaction)
    return builder(inputs)


def record_step(log: SessionLog, setup: StepSetup, result: BuildResult, *, calibration_ratio: float = 1.0,
                body: Body = request_body, previous: Request | None = None) -> RecordedStep:
    """Record a step built from this log (nothing appended since) with `calibration_ratio`: append
    the compactions it planned, then its `context_report` (see the module doc). `previous`: the request
    sent before this one, when the caller kept it: a relief since then logs its price in the report
    (builder/relief_price.py)."""
    if previous is not None:
        price = price_of_relief(log, setup, result, calibration_ratio, previous)
        result.report.relief_price = price.to_dict() if price is not None else None
    # usually none; two when the current turn alone overflowed and its older steps were summarized too
    compactions = [log.append(planned.data, expect_id=planned.event_id) for planned in result.compactions]
    sent = body(result.request)
    report = log.append(ContextReportData(
        step=result.report.step,
        report=result.report.to_dict(),
        request_sha256=request_sha256(sent),
        warm=result.warm_text,
        calibration_ratio=calibration_ratio,
        model=setup.model,
        build=setup.params(),
    ))
    return RecordedStep(result, compactions, report, sent)


def price_of_relief(log: SessionLog, setup: StepSetup, result: BuildResult, calibration_ratio: float,
                    previous: Request) -> ReliefPrice | None:
    """The prompt-cache effect of the relief between `previous` and this build's request (None: none)."""
    rules = rules_for(setup.model, setup.cache_ttl)
    state = cache_for(setup.counter, setup.cache).log_state(log.events)
    cold = state.cold.with_build(setup.model, rules.ttl_s)
    newest = next((m.event_id for m in reversed(result.request.messages) if m.event_id is not None), None)
    return relief_price(previous, result.request, setup.counter, calibration_ratio, rules, newest in cold)


def build_step(log: SessionLog, setup: StepSetup, *, step: int | None = None, turn: int | None = None,
               calibration_ratio: float = 1.0, body: Body = request_body, builder: Builder = build) -> RecordedStep:
    """Build the next request and record it (`build_next`, then `record_step`). `builder`: the build
    function (a benchmark may time it). Raises ContextOverflowError, with nothing appended, when even
    the relieved history cannot fit."""
    result = build_next(log, setup, step=step, turn=turn, calibration_ratio=calibration_ratio, builder=builder)
    return record_step(log, setup, result, calibration_ratio=calibration_ratio, body=body)


def refused_ratio(refused_total: int, budget: Budget, calibration_ratio: float) -> float:
    """The calibration to retry with after the provider refused a request of `refused_total` local
    tokens as too long: it counted at least the limit for it, so it counts at least limit / total
    provider tokens per local token — with a margin, since by how much it was over is not known."""
    seen = budget.limit / refused_total if refused_total > 0 else 1.0
    return max(calibration_ratio, seen) * REFUSAL_MARGIN
