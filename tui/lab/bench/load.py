"""`ctxagent bench load`: a long scripted session, in process, with the real engine and memory.

Each turn reads a file (a fresh ~1k-token result) and answers, so history grows without bound
while the window stays fixed. Per step it records the build time, the tokens the counter had to
tokenize afresh (cache misses: the O(new content) claim, in counts rather than seconds) and the
process's memory, and returns the curve sampled every `every` turns.
"""

from __future__ import annotations

import resource
import subprocess
import tempfile
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

from ctxagent.agent.config import Config
from ctxagent.agent.loop import Agent
from ctxagent.agent.parts import AgentParts
from ctxagent.agent.session import open_session
from ctxagent.agent.updates import AgentEvent, ContextBuilt, StepStarted
from ctxagent.context.budget import Budget
from ctxagent.context.builder.dispatch import build
from ctxagent.context.builder.inputs import BuildInputs, BuildResult
from ctxagent.context.calibrator import Calibrator
from ctxagent.context.floor.display import echo, json_text
from ctxagent.context.memory import MemoryStore
from ctxagent.context.memory.recall import MemoryRecall
from ctxagent.context.spill import SpillStore
from ctxagent.context.tokens import CachedCounter, get_counter
from ctxagent.tools import make_registry
from ctxagent.tui.lab.scripted.provider import ScriptedProvider


@dataclass
class LoadSample:
    turn: int
    events: int
    build_ms_median: float  # median build time of the steps since the previous sample
    new_tokenizations: float  # mean counter cache misses per step since the previous sample
    traced_mb: float  # Python heap in use (tracemalloc)
    rss_mb: float  # peak resident set size of the process
    # median time in the builder alone (build(): incl. the memory recall it calls); build_ms_median also
    # counts recording the step: the provider's request body, its sha256 and the log append
    builder_ms_median: float = -1.0


@dataclass
class LoadResult:
    turns: int
    steps: int
    window: int
    completed: bool
    samples: list[LoadSample] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"turns": self.turns, "steps": self.steps, "window": self.window, "completed": self.completed,
                "samples": [s.__dict__ for s in self.samples]}


def _script(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for t in range(turns):
        out.append({"text": f"Reading module {t % 50}.", "tool_calls": [{"name": "read_file", "arguments": {"path": f"src/m{t % 50}.py"}}]})
        out.append({"text": f"Turn {t}: module {t % 50} looks fine; we decided to keep its API."})
    return out


def _repo(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    for m in range(50):
        body = "\n".join(f"def f{m}_{j}(x):\n    return x * {j} + {m}  # step {j}" for j in range(60))
        (root / "src" / f"m{m}.py").write_text(body + "\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


def run_load(turns: int = 1000, window: int = 32_000, every: int = 100, workdir: Path | None = None, trace: bool = False) -> LoadResult:
    """`trace` adds tracemalloc's heap figure (and its ~2× slowdown); RSS is always recorded."""
    with tempfile.TemporaryDirectory(prefix="ctxagent-load-") as tmp:
        root = Path(workdir or tmp) / "repo"
        _repo(root)
        cfg = Config(model="scripted:load", permission_mode="yolo", summary_model="none")
        session = open_session(root, cfg)
        store = MemoryStore.open(root / ".ctxagent" / "memory.db")
        counter = CachedCounter(get_counter("o200k_base"))
        parts = AgentParts(
            provider=ScriptedProvider(_script(turns)),
            registry=make_registry(),
            counter=counter,
            budget=Budget(window, max_output=2048),
            calibrator=Calibrator("scripted:load"),
            spill=SpillStore(root / ".ctxagent" / "spill"),
            system="You are a coding agent under load.",
            model_label="scripted:load",
            memory=store,
            warm=MemoryRecall(store, session.id),
        )
        build_ms: list[float] = []
        misses: list[int] = []
        started = {"at": 0.0}
        misses_at = {"start": 0}

        def on_event(ev: AgentEvent) -> None:
            if isinstance(ev, StepStarted):
                started["at"], misses_at["start"] = time.perf_counter(), counter.misses
            elif isinstance(ev, ContextBuilt):
                build_ms.append((time.perf_counter() - started["at"]) * 1000)
                misses.append(counter.misses - misses_at["start"])

        builder_ms: list[float] = []

        def timed_build(inputs: BuildInputs) -> BuildResult:
            t0 = time.perf_counter()
            try:
                return build(inputs)
            finally:
                builder_ms.append((time.perf_counter() - t0) * 1000)

        agent = Agent(session, parts, on_event=on_event, builder=timed_build)
        last_builder = 0
        result = LoadResult(turns=turns, steps=0, window=window, completed=False)
        if trace:
            tracemalloc.start()
        last = 0
        try:
            for t in range(1, turns + 1):
                done = agent.run_turn(f"turn {t}: check the next module")
                if done.stop_reason != "end_turn":
                    return result
                if t % every == 0 or t == turns:
                    span_ms, span_miss = build_ms[last:], misses[last:]
                    last = len(build_ms)
                    span_builder, last_builder = builder_ms[last_builder:], len(builder_ms)
                    result.samples.append(LoadSample(
                        turn=t,
                        events=len(session.log.events),
                        build_ms_median=round(median(span_ms), 3),
                        new_tokenizations=round(sum(span_miss) / len(span_miss), 2),
                        traced_mb=round(tracemalloc.get_traced_memory()[0] / 2**20, 1) if trace else -1.0,
                        rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                        builder_ms_median=round(median(span_builder), 3) if span_builder else -1.0,
                    ))
            result.completed = True
        finally:
            if trace:
                tracemalloc.stop()
            result.steps = len(build_ms)
            session.log.close()
            store.close()
        return result


def format_load(result: LoadResult) -> str:
    lines = [
        f"{result.turns} turns, {result.steps} steps, window {result.window:,}: {'completed' if result.completed else 'DID NOT COMPLETE'}",
        "",
        "| turn | log events | build ms (median) | builder alone ms (median) | new tokenizations / step | Python heap MB | peak RSS MB |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in result.samples:
        lines.append(f"| {s.turn} | {s.events} | {s.build_ms_median} | {s.builder_ms_median} | {s.new_tokenizations} | {s.traced_mb} "
                     f"| {s.rss_mb} |")
    return "\n".join(lines)


def _run(args: Any) -> int:

    result = run_load(turns=args.turns, window=args.window, every=args.every, trace=args.trace)
    echo(json_text(result.to_dict(), indent=2) if args.json else format_load(result))
    return 0 if result.completed else 1


def add_parser(bench_subparsers: Any) -> None:
    p = bench_subparsers.add_parser("load", help="a long scripted session: build cost, new tokenizations and memory per turn")
    p.add_argument("--turns", type=int, default=1000)
    p.add_argument("--window", type=int, default=32_000)
    p.add_argument("--every", type=int, default=100, help="sample the curve every N turns")
    p.add_argument("--trace", action="store_true", help="also record the Python heap (tracemalloc; slower)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)
