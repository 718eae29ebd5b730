"""The replay's fixed parts: strategies, lanes, the engine binding, and the stable prefix of every request.

Whole requests: every strategy's request carries the same stable prefix — the source's system prompt
and, where the transcript lacks them, an estimate of its system prompt and tool schemas (`Prefix`):
the intercept of the fit `reported = a + b · local` over the reference's calls before its first
compaction, a/b local tokens, stands in as filler text (`--overhead auto`, the default). `none` adds
nothing (history and the transcript's own system prompt, the old measure), `product` uses ctxagent's
own system prompt and tool schemas, a number adds that many tokens.

After its own compaction a source's request holds more than its transcript shows: Claude Code
re-attaches context to the summary (recently read files and the like) that no record holds. The
calibrator's pairs count it (`hidden_after_compaction`: per run, the median of what the provider
reported beyond the fit over those calls), so that its ratio stays provider tokens per local token of
the same text, and a strategy's request is not charged for content only the source's carried.
"""

from __future__ import annotations

import statistics
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxagent.context.budget import default_max_output
from ctxagent.context.events import CompactionData, Payload, parse_payload
from ctxagent.context.history import Event
from ctxagent.context.request import ToolSpec
from ctxagent.context.tokens import TokenCounter
from ctxagent.tui.lab.bench.cache_cost import Breakpoints, CacheRules, CacheSim
from ctxagent.tui.lab.bench.emulations import EMULATED, ServerParams
from ctxagent.tui.lab.bench.metrics import Fit, fit_affine
from ctxagent.tui.lab.bench.prices import Pricing
from ctxagent.tui.lab.bench.readers import Call, SourceEvent, Trajectory
from ctxagent.tui.lab.bench.replay_stats import StrategyStats
from ctxagent.tui.lab.bench.request_meter import RequestMeter
from ctxagent.tui.lab.bench.used_later import RequestAtoms

BASELINE = "last2+names"
GREP = "grep"
BASELINES = (GREP, BASELINE)
STRATEGIES = ("full", "window", "ctxagent", GREP, BASELINE, *EMULATED)
RAW = ("full", "window", GREP, BASELINE, "anthropic-clear")  # strategies that read the raw log as it is
REFERENCE_WINDOW = 1_000_000_000  # the reference view is measured, never trimmed
SPILL_TOKENS = 2000
# a source's model when its transcript does not say (Claude Code's records do, per call)
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
    atoms: RequestAtoms = field(default_factory=RequestAtoms)  # what its current request holds (used_later.py)
    source_ids: dict[int, int] | None = None  # source position → its event id here (lanes that log differently)
    spills: dict[int, str] = field(default_factory=dict)  # event id → spill handle
    last: tuple[Any, ...] | None = None  # the reference: its last call's (scale, time, model, weight, rules)

    def append(self, payload: Payload, ts: float = 0.0, expect_id: int | None = None) -> Event:
        """Append one typed event, as `SessionLog.append` does (a planned id that is not the next one raises)."""
        if expect_id is not None and expect_id != len(self.events):
            raise ValueError(f"{self.name}: planned event id {expect_id} but the log is at {len(self.events)}")
        ev = Event(len(self.events), type(payload).KIND, payload.to_data(), ts)
        self.events.append(ev)
        return ev


def source_payload(sev: SourceEvent) -> Payload:
    """A reader's event as the typed payload the session log would hold."""
    return parse_payload(sev.kind, sev.data)


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
    budget_params: dict[str, Any] = field(default_factory=dict)  # Budget fields a sweep sets (bench fit), else defaults
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
            warm: Any = None, tools: Sequence[ToolSpec] = (), ratio: float = 1.0, cache: Any = None,
            model: str = "") -> Any:
        # the reply's reserve as the agent sets it (agent/factory.py): the model's max output, ≤ 8,192 and W / 8
        budget = self.budget_cls(window=window, max_output=default_max_output(window), **self.budget_params)
        inputs = self.build_inputs_cls(events=events, system=system, tools=list(tools), budget=budget, counter=self.counter,
                                       step=step, turn=turn, strategy=strategy, warm=warm, calibration_ratio=ratio,
                                       cache=cache, model=model)
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
        lane.append(source_payload(sev))


def append_source_compaction(lane: Lane, sev: SourceEvent) -> bool:
    firsts = [e.id for e in lane.events if e.kind in ("user", "assistant", "tool_result")]
    if not firsts:
        return False
    lane.append(CompactionData(first_id=firsts[0], last_id=lane.events[-1].id, summary=str(sev.data.get("summary", "")),
                               method="model"))
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
            # the prompt names the repository's root: one fixed name, so every process counts the same prompt
            head = system_prompt(Path(root)).replace(str(root), "/home/user/repo")
        tools = default_registry().specs()
        return Prefix("product", head=head, tools=tools,
                      tokens=count_system(head, counter) + sum(count_tool_spec(t, counter) for t in tools))
    if mode == "auto":
        tokens = estimated_prefix(fit)
    else:
        tokens = int(mode)
    filler = filler_text(tokens, counter)
    return Prefix(mode, filler=filler, tokens=count_system(filler, counter) if filler else 0)


def reference_pass(traj: Trajectory, engine: Engine) -> list[tuple[float, bool]]:
    """The fit pass over one run: per call, (local tokens of its request's history part — the framing overhead
    and the messages of the original agent's own view — and whether it came after its own compaction). The
    system prompt and tools are counted apart (`request_local`), so one pass serves every prefix."""
    out = []
    for _call, local, after in reference_views(traj, engine, system=""):
        out.append((local - engine.meter.system_tokens(""), after))
    return out


def request_local(history_local: float, system: str, tools: Sequence[ToolSpec], engine: Engine) -> float:
    """A request's local tokens from its history part (reference_pass) and its stable prefix."""
    return history_local + engine.meter.system_tokens(system) + engine.meter.tools_tokens(tools)


def source_fit(trajectories: Sequence[Trajectory], engine: Engine,
               passes: Sequence[list[tuple[float, bool]]] | None = None) -> Fit | None:
    """reported = a + b · local over the reference's calls before its first compaction (history and the
    transcript's own system prompt only)."""
    xs: list[float] = []
    ys: list[float] = []
    for k, traj in enumerate(trajectories):
        rows = passes[k] if passes is not None else reference_pass(traj, engine)
        for call, (local, after) in zip(traj.calls, rows, strict=True):
            if call.reported and not after:
                xs.append(request_local(local, traj.system, (), engine))
                ys.append(float(call.reported))
    return fit_affine(xs, ys)


def call_model(call: Call, source: str) -> str:
    return call.model or MODELS.get(source, "model")


def hidden_after_compaction(trajectories: Sequence[Trajectory], passes: Sequence[list[tuple[float, bool]]],
                            fit: Fit | None, engine: Engine) -> list[float]:
    """Per run, the local tokens its requests carried after its own compaction that its transcript lacks: the
    median, over those calls, of the reported tokens beyond the fit (reported − a − b · local), over b; 0 for a
    run without such calls, without a fit, or whose requests carried no more than the fit says."""
    out: list[float] = []
    for traj, rows in zip(trajectories, passes, strict=True):
        beyond = [call.reported - fit.predict(request_local(local, traj.system, (), engine))
                  for call, (local, after) in zip(traj.calls, rows, strict=True)
                  if after and call.reported] if fit is not None and fit.b > 0 else []
        out.append(round(max(0.0, statistics.median(beyond) / fit.b), 1) if beyond and fit is not None else 0.0)
    return out


def calibrated_ratios(trajectories: Sequence[Trajectory], passes: Sequence[list[tuple[float, bool]]],
                      ref_prefix: Prefix, engine: Engine,
                      hidden: Sequence[float] | None = None) -> tuple[list[list[float]], dict[str, float]]:
    """The ratio the product's Calibrator has at every call, in call order over the runs: one calibrator per
    model (as the product keeps them), fed each earlier call's (reference local count, reported usage), the
    count with the run's `hidden` tokens after its own compaction (hidden_after_compaction). The replay of each
    run then needs only its own list, so runs can be replayed apart. Also the final ratios."""
    from ctxagent.context.calibrator import Calibrator

    cals: dict[str, Any] = {}
    out: list[list[float]] = []
    for i, (traj, rows) in enumerate(zip(trajectories, passes, strict=True)):
        system = ref_prefix.system(traj.system)
        extra = float(hidden[i]) if hidden is not None else 0.0
        ratios = []
        for call, (local, after) in zip(traj.calls, rows, strict=True):
            model = call_model(call, traj.source)
            cal = cals.setdefault(model, Calibrator(model))  # no path: never persisted over the user's
            ratios.append(float(cal.ratio))
            sent = request_local(local, system, ref_prefix.tools, engine) + (extra if after else 0.0)
            cal.update(int(sent), call.reported)
        out.append(ratios)
    return out, {m: round(float(c.ratio), 4) for m, c in sorted(cals.items())}


# -- what a replay carries ------------------------------------------------------------------------
@dataclass
class ReplayTotals:
    """One run's (or, merged, a whole source's) accumulators."""

    strategies: dict[str, StrategyStats] = field(default_factory=lambda: {s: StrategyStats() for s in STRATEGIES})
    reference: StrategyStats = field(default_factory=StrategyStats)
    calls: int = 0
    after_calls: int = 0  # calls after the source's own compaction
    runs: int = 0
    ttl_1h_runs: int = 0  # runs whose transcript wrote its cache with the 1-hour TTL
    models: Counter[str] = field(default_factory=Counter)  # calls per model
    notes: Counter[str] = field(default_factory=Counter)

    def to_state(self) -> dict[str, Any]:
        return {"strategies": {n: s.to_state() for n, s in self.strategies.items()}, "reference": self.reference.to_state(),
                "calls": self.calls, "after_calls": self.after_calls, "runs": self.runs, "ttl_1h_runs": self.ttl_1h_runs,
                "models": dict(self.models), "notes": dict(self.notes)}

    @classmethod
    def from_state(cls, d: dict[str, Any]) -> ReplayTotals:
        return cls({n: StrategyStats.from_state(s) for n, s in d["strategies"].items()},
                   StrategyStats.from_state(d["reference"]), d["calls"], d["after_calls"], d["runs"], d["ttl_1h_runs"],
                   Counter(d["models"]), Counter(d["notes"]))

    def merge(self, other: ReplayTotals) -> None:
        for name, st in other.strategies.items():
            self.strategies.setdefault(name, StrategyStats()).merge(st)
        self.reference.merge(other.reference)
        self.calls += other.calls
        self.after_calls += other.after_calls
        self.runs += other.runs
        self.ttl_1h_runs += other.ttl_1h_runs
        self.models.update(other.models)
        self.notes.update(other.notes)


@dataclass
class Setup:
    """Everything fixed for a whole source."""

    engine: Engine
    strategies: Sequence[str]
    prefix: Prefix
    rules: CacheRules
    server: ServerParams
    pricing: Pricing
    use_memory: bool = True
    # the reference's own stable prefix: the source's (estimated) one, whatever the strategies carry, so that
    # the calibrator learns the ratio from requests that contain what the provider counted
    reference_prefix: Prefix | None = None
    memory_store: Callable[[Path], Any] | None = None  # opens the ctxagent lane's memory store (None: the product's)

    @property
    def ref_prefix(self) -> Prefix:
        return self.reference_prefix or self.prefix

    @property
    def triggers(self) -> dict[str, int]:
        return self.server.triggers(self.engine.window)
