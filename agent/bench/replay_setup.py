"""The replay's fixed parts: strategies, lanes, the engine binding, and the stable prefix of every request.

Whole requests: every strategy's request carries the same stable prefix — the source's system prompt
and, where the transcript lacks them, an estimate of its system prompt and tool schemas (`Prefix`):
the intercept of the fit `reported = a + b · local` over the reference's calls before its first
compaction, a/b local tokens, stands in as filler text (`--overhead auto`, the default). `none` adds
nothing (history and the transcript's own system prompt, the old measure), `product` uses ctxagent's
own system prompt and tool schemas, a number adds that many tokens.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxagent.agent.bench.cache_cost import Breakpoints, CacheRules, CacheSim
from ctxagent.agent.bench.emulations import EMULATED, ServerParams
from ctxagent.agent.bench.metrics import Fit, fit_affine
from ctxagent.agent.bench.presence import PresenceIndex
from ctxagent.agent.bench.readers import Call, SourceEvent, Trajectory
from ctxagent.agent.bench.replay_stats import StrategyStats
from ctxagent.agent.bench.request_meter import RequestMeter
from ctxagent.agent.bench.requirements import LineTracker
from ctxagent.context.history import Event
from ctxagent.context.request import Request, ToolSpec
from ctxagent.context.tokens import TokenCounter

BASELINE = "last2+names"
STRATEGIES = ("full", "window", "ctxagent", BASELINE, *EMULATED)
RAW = ("full", "window", BASELINE, "anthropic-clear")  # strategies that read the raw log as it is
REFERENCE_WINDOW = 1_000_000_000  # the reference view is measured, never trimmed
SPILL_TOKENS = 2000
MODELS = {"claude-code": "claude-opus-4-6", "mini-swe-agent": "gemini-3-pro", "swe-agent": "gpt-4",
          "openhands": "llama-4-maverick"}
_FILLER_HEAD = "[The source agent's system prompt and tool schemas, which its transcript does not contain: an estimate of their size.]"


@dataclass
class Lane:
    """One strategy's private log and the state its measures need between calls."""

    name: str
    events: list[Event] = field(default_factory=list)
    prev_chunks: list[tuple[Any, int]] | None = None
    ingested: int = 0
    pruned: set[Any] = field(default_factory=set)
    cache: Any = None  # its own BuildCache: lanes with different logs would evict each other's
    sim: CacheSim | None = None
    sim_last: CacheSim | None = None

    def append(self, kind: str, data: dict[str, Any], ts: float = 0.0) -> Event:
        ev = Event(len(self.events), kind, data, ts)
        self.events.append(ev)
        return ev


@dataclass
class Prefix:
    """The stable part of every request: the source's system prompt, plus what its transcript lacks."""

    mode: str  # "auto" (estimated from the fit) | "none" | "product" (ctxagent's own prompt and tools) | tokens
    filler: str = ""
    tools: list[ToolSpec] = field(default_factory=list)
    head: str = ""  # the product's system prompt ("product" mode)
    tokens: int = 0  # local tokens added to every request

    def system(self, source_system: str) -> str:
        return "\n\n".join(p for p in (self.filler, self.head, source_system) if p)

    def to_dict(self) -> dict[str, Any]:
        how = {"auto": "estimated as the fit's intercept a/b: the system prompt and tool schemas the transcript lacks",
               "none": "nothing added: history and the transcript's own system prompt only",
               "product": "ctxagent's own system prompt and tool schemas"}.get(self.mode, "a fixed size given on the command line")
        return {"mode": self.mode, "tokens": self.tokens, "how": how}


@dataclass
class Engine:
    """What the replay needs from the context engine, bound once per run."""

    counter: Any
    window: int
    build: Callable[..., Any]
    budget_cls: Any
    build_inputs_cls: Any
    meter: RequestMeter = field(init=False)
    _breakpoints: Breakpoints | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.meter = RequestMeter(self.counter)

    @classmethod
    def load(cls, window: int, encoding: str = "o200k_base") -> Engine:
        from ctxagent.context.budget import Budget
        from ctxagent.context.builder.dispatch import build
        from ctxagent.context.builder.inputs import BuildInputs
        from ctxagent.context.tokens import CachedCounter, get_counter

        return cls(CachedCounter(get_counter(encoding), max_entries=200_000), window, build, Budget, BuildInputs)

    @property
    def breakpoints(self) -> Breakpoints:
        if self._breakpoints is None:
            self._breakpoints = Breakpoints()
        return self._breakpoints

    def run(self, events: list[Event], system: str, strategy: str, window: int, step: int, turn: int,
            warm: Any = None, tools: Sequence[ToolSpec] = (), ratio: float = 1.0, cache: Any = None) -> Any:
        budget = self.budget_cls(window=window, max_output=min(8192, max(256, window // 4)))
        inputs = self.build_inputs_cls(events=events, system=system, tools=list(tools), budget=budget, counter=self.counter,
                                       step=step, turn=turn, strategy=strategy, warm=warm, calibration_ratio=ratio,
                                       cache=cache)
        return self.build(inputs)


def new_build_cache() -> Any:
    from ctxagent.context.builder.cache import BuildCache

    return BuildCache()


# -- the reference's own view and the prefix the transcripts lack --------------------------------
def reference_views(traj: Trajectory, engine: Engine, system: str | None = None) -> Iterator[tuple[Call, float, bool]]:
    """(call, local tokens of the request the original agent sent, whether it came after its own compaction)."""
    call_at = {c.position: c for c in traj.calls}
    engine.meter.reset()
    lane = Lane("reference", cache=new_build_cache())
    turn = step = 0
    after = False
    for pos, sev in enumerate(traj.events):
        call = call_at.get(pos)
        if call is not None:
            step += 1
            result = engine.run(lane.events, traj.system if system is None else system, "full", REFERENCE_WINDOW, step,
                                max(turn, 1), cache=lane.cache)
            yield call, float(sum(n for _, n in engine.meter.chunks(result.request))), after
        if sev.kind == "user":
            turn += 1
        if sev.kind == "source_compaction":
            after = True
            append_source_compaction(lane, sev)
            continue
        lane.append(sev.kind, sev.data)


def append_source_compaction(lane: Lane, sev: SourceEvent) -> bool:
    firsts = [e.id for e in lane.events if e.kind in ("user", "assistant", "tool_result")]
    if not firsts:
        return False
    lane.append("compaction", {"first_id": firsts[0], "last_id": lane.events[-1].id,
                               "summary": sev.data.get("summary", ""), "method": "model"})
    return True


def filler_text(tokens: int, counter: TokenCounter) -> str:
    """Deterministic prose of about `tokens` local tokens (never fewer than the head line)."""
    if tokens <= 0:
        return ""
    unit = " the schema of a tool"
    per = max(1, counter.count(unit * 50) // 50)
    base = counter.count(_FILLER_HEAD)
    text = _FILLER_HEAD + unit * max(0, (tokens - base) // per)
    while counter.count(text) > tokens and len(text) > len(_FILLER_HEAD):
        text = text[: -len(unit)]
    return text


def estimated_prefix(fit: Fit | None) -> int:
    """Local tokens every call had and the transcript lacks: the fit's intercept a/b (0 without one)."""
    return int(round(fit.a / fit.b)) if fit is not None and fit.b > 0 and fit.a > 0 else 0


def make_prefix(mode: str, fit: Fit | None, counter: Any) -> Prefix:
    from ctxagent.context.tokens import count_system, count_tool_spec

    if mode == "none":
        return Prefix("none")
    if mode == "product":
        from ctxagent.agent.factory import default_registry, system_prompt

        with tempfile.TemporaryDirectory(prefix="ctxbench-root-") as root:
            head = system_prompt(Path(root))
        tools = default_registry().specs()
        return Prefix("product", head=head, tools=tools,
                      tokens=count_system(head, counter) + sum(count_tool_spec(t, counter) for t in tools))
    if mode == "auto":
        tokens = estimated_prefix(fit)
    else:
        tokens = int(mode)
    filler = filler_text(tokens, counter)
    return Prefix(mode, filler=filler, tokens=count_system(filler, counter) if filler else 0)


def source_fit(trajectories: Sequence[Trajectory], engine: Engine) -> Fit | None:
    """reported = a + b · local over the reference's calls before its first compaction (history and the
    transcript's own system prompt only)."""
    xs: list[float] = []
    ys: list[float] = []
    for traj in trajectories:
        for call, local, after in reference_views(traj, engine):
            if call.reported and not after:
                xs.append(local)
                ys.append(float(call.reported))
    return fit_affine(xs, ys)


# -- what a replay carries ------------------------------------------------------------------------
@dataclass
class ReplayTotals:
    strategies: dict[str, StrategyStats] = field(default_factory=lambda: {s: StrategyStats() for s in STRATEGIES})
    reference: StrategyStats = field(default_factory=StrategyStats)
    calls: int = 0
    after_calls: int = 0  # calls after the source's own compaction
    runs: int = 0
    notes: Counter[str] = field(default_factory=Counter)


@dataclass
class Setup:
    """Everything fixed for a whole source."""

    engine: Engine
    strategies: Sequence[str]
    prefix: Prefix
    calibrator: Any
    rules: CacheRules
    server: ServerParams
    use_memory: bool = True
    # the reference's own stable prefix: the source's (estimated) one, whatever the strategies carry, so that
    # the calibrator learns the ratio from requests that contain what the provider counted
    reference_prefix: Prefix | None = None

    @property
    def ref_prefix(self) -> Prefix:
        return self.reference_prefix or self.prefix

    @property
    def triggers(self) -> dict[str, int]:
        return self.server.triggers(self.engine.window)


@dataclass
class CallContext:
    """What every strategy's request at one call is measured against."""

    facts: list[str]
    after: bool  # the original run compacted before this call
    early: list[str]
    names: list[str]  # every file name seen so far
    tracker: LineTracker
    presence: PresenceIndex
    ratio: float  # the Calibrator's ratio at this call: local → provider tokens
    now: float | None
    system: str  # the strategies' system prompt (with their stable prefix)
    ref_system: str  # the reference's
    step: int
    turn: int

    def size(self, engine: Engine, request: Request) -> float:
        return sum(n for _, n in engine.meter.chunks(request)) * self.ratio


