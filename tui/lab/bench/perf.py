"""`bench perf`: what the engine costs as history grows, and how fast the program starts.

- builder: one step (append an assistant call + its tool result, then build, with the session
  ledger, memory recall and cold-start relief on) on a history of 10k → 500k tokens made of real
  mini-swe-agent traffic; p50 and p95 of `steps` steps per size, against re-tokenizing the whole history
  from scratch each step (what an uncached agent does); the ratio per size. The window is set well
  above the history so the step measures the steady-state build, not a compaction.
- memory search: p50 / p95 of `MemoryStore.search` at 10k and 100k records written from real
  agent text, queried with real task descriptions plus a file name (what recall asks each step).
- redaction: the log's sanitizer (`context/floor/sanitize.py`) in characters per CPU second at 10k /
  100k / 1M characters, on real tool output and on inputs made to be slow (`ADVERSARIAL`: each repeats
  what starts a candidate of one secret shape, where a pattern that rescans from every candidate is
  quadratic — `token=` ×13,333 took 7.8 s before issue 19); the slowest of them is reported.
- `ctxagent --version` wall time, and the TUI's first frame (a fresh interpreter creating the
  Textual app under `run_test` until its first screen is mounted).
"""

from __future__ import annotations

import importlib.util
import itertools
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ctxagent.context.history import Event
from ctxagent.tui.lab.bench.metrics import event_text, percentile
from ctxagent.tui.lab.bench.readers import SourceEvent, read_source

DEFAULT_SIZES = (10_000, 50_000, 100_000, 200_000, 500_000)
DEFAULT_RECORDS = (10_000, 100_000)
REDACTION_SIZES = (10_000, 100_000, 1_000_000)

_FALLBACK_TEXT = ("The parser in src/parser.py fails on nested tuples; 解析器在嵌套元组上失败. "
                  "We'll use the iterative walker instead of recursion. Tests: 12 passed, 1 failed.")


def _real_events(data: Path | str | None, runs: int = 60) -> list[SourceEvent]:
    try:
        trajs = read_source("mini-swe-agent", data, limit=runs).trajectories
    except (FileNotFoundError, ValueError):
        trajs = []
    out = [e for t in trajs for e in t.events if e.kind in ("user", "assistant", "tool_result")]
    if not out:  # no data: a synthetic but honest stream
        for i in range(400):
            out.append(SourceEvent("assistant", {"text": f"step {i}", "tool_calls": [
                {"id": f"c{i}", "name": "bash", "arguments": {"command": f"cat src/m{i % 50}.py"}}]}))
            out.append(SourceEvent("tool_result", {"call_id": f"c{i}", "name": "bash",
                                                   "content": (_FALLBACK_TEXT + "\n") * 20, "is_error": False, "meta": {}}))
    return out


def _event_stream(pool: Sequence[SourceEvent]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Endless (kind, data) pairs from the pool; call ids renamed so repeats stay unique."""
    for rnd in itertools.count():
        for sev in pool:
            data = dict(sev.data)
            if sev.kind == "assistant":
                data["tool_calls"] = [{**c, "id": f"{c['id']}#{rnd}"} for c in data.get("tool_calls") or []]
            elif sev.kind == "tool_result":
                data["call_id"] = f"{data.get('call_id')}#{rnd}"
                data["content"] = f"[round {rnd}]\n{data.get('content', '')}"  # repeats are new content
            yield sev.kind, data


def bench_builder(sizes: Sequence[int] = DEFAULT_SIZES, steps: int = 5, data: Path | str | None = None,
                  progress: Any = None) -> list[dict[str, Any]]:
    from ctxagent.context.budget import Budget
    from ctxagent.context.builder.dispatch import build
    from ctxagent.context.builder.inputs import BuildInputs
    from ctxagent.context.memory import MemoryStore
    from ctxagent.context.memory.recall import MemoryRecall
    from ctxagent.context.tokens import CachedCounter, get_counter

    raw = get_counter("o200k_base")
    # memory on, as in the agent: the store ingests what arrived (untimed: the agent does it after the
    # step), the build recalls into the warm block; BM25 (the warm block's recall is lexical either way)
    store = MemoryStore.open(":memory:", embeddings=False)
    recall = MemoryRecall(store, "bench")
    ingested = 0
    cpu: list[float] = []
    stream = _event_stream(_real_events(data))
    events: list[Event] = []
    texts: list[str] = []
    tokens = 0
    turn = 0
    rows: list[dict[str, Any]] = []
    counter = CachedCounter(raw, max_entries=500_000)

    def grow_one() -> None:
        nonlocal tokens, turn
        kind, dat = next(stream)
        if kind == "user":
            turn += 1
            dat["turn"] = turn
        events.append(Event(len(events), kind, dat))
        text = event_text(kind, dat)
        texts.append(text)
        tokens += raw.count(text)

    def step_once(size: int) -> float:
        # a step = the model's call and its result arrive, then the next request is built
        nonlocal ingested
        target = len(events) + 2
        while len(events) < target or events[-1].kind == "assistant":
            grow_one()
        store.ingest(events[ingested:], "bench")
        ingested = len(events)
        budget = Budget(window=max(2 * size, 64_000), max_output=8192)
        inputs = BuildInputs(events=events, system="You are a coding agent.", tools=[], budget=budget,
                             counter=counter, step=len(events), turn=max(turn, 1), strategy="ctxagent", warm=recall)
        t0, c0 = time.perf_counter(), time.process_time()
        build(inputs)
        cpu.append((time.process_time() - c0) * 1000)  # CPU time: honest on a loaded machine, where wall time is not
        return (time.perf_counter() - t0) * 1000

    for size in sizes:
        if progress is not None:
            progress.advance(0, note=f"growing the history to {size:,} tokens")
        while tokens < size:
            grow_one()
            if progress is not None and len(events) % 500 == 0:
                progress.advance(0, note=f"growing the history: {tokens:,} of {size:,} tokens")
        store.ingest(events[ingested:], "bench")  # what arrived while growing (untimed, as below)
        ingested = len(events)
        step_once(size)  # the first build at this size counts what arrived since the last size
        cpu.clear()
        times = [step_once(size) for _ in range(steps)]
        build_ms = statistics.median(times)
        retok, retok_cpu = [], []
        for _ in range(max(1, min(3, steps))):
            t0, c0 = time.perf_counter(), time.process_time()
            for t in texts:
                raw.count(t)
            retok.append((time.perf_counter() - t0) * 1000)
            retok_cpu.append((time.process_time() - c0) * 1000)
        retok_ms = statistics.median(retok)
        build_cpu = statistics.median(cpu)
        rows.append({"history_tokens": tokens, "events": len(events), "build_ms": round(build_ms, 2),
                     "build_p95_ms": round(percentile(times, 95), 2), "build_cpu_ms": round(build_cpu, 2),
                     "retokenize_ms": round(retok_ms, 2), "ratio": round(retok_ms / build_ms, 1) if build_ms else None,
                     "ratio_cpu": round(statistics.median(retok_cpu) / build_cpu, 1) if build_cpu else None})
        if progress is not None:
            progress.advance(note=f"{size // 1000}k")
    store.close()
    return rows


def _record_texts(data: Path | str | None) -> tuple[list[str], list[str]]:
    """Record contents (real assistant text and tool-output lines) and real queries (task + file)."""
    contents: list[str] = []
    queries: list[str] = []
    try:
        trajs = read_source("mini-swe-agent", data).trajectories
    except (FileNotFoundError, ValueError):
        trajs = []
    from ctxagent.tui.lab.bench.metrics import paths_in

    for t in trajs:
        task = next((e.data["text"] for e in t.events if e.kind == "user"), "")
        files = sorted(paths_in(task)) or ["setup.py"]
        queries.append(" ".join(task.split()[:40]) + " " + files[0])
        for e in t.events:
            if e.kind == "assistant" and e.data.get("text"):
                contents.append(" ".join(str(e.data["text"]).split()[:80]))
            elif e.kind == "tool_result":
                contents += [ln.strip() for ln in str(e.data.get("content", "")).splitlines() if len(ln.strip()) > 30][:20]
    if not contents:
        contents = [f"{_FALLBACK_TEXT} #{i}" for i in range(1000)]
        queries = ["parser nested tuples", "解析器 递归", "tests failed src/parser.py"]
    return contents, queries


def bench_memory(record_counts: Sequence[int] = DEFAULT_RECORDS, queries: int = 200, data: Path | str | None = None,
                 progress: Any = None, modes: Sequence[str] = ("bm25", "hybrid")) -> list[dict[str, Any]]:
    """Per record count, both modes on the same records: `bm25` (no model) and `hybrid` (the installed
    model's vectors, memory_latency.give_vectors; left out, and said so, without the model). Each of
    the first `queries` // 4 distinct queries is asked 4 times: `first` is its first time (with the
    model, its vector is embedded then), `p50_ms` / `p95_ms` the repeats — the same question asked at
    every step of a turn, or again by the model."""
    from ctxagent.context.memory import MemoryStore
    from ctxagent.tui.lab.bench.memory_latency import bench_embedder, give_vectors, time_searches

    contents, qs = _record_texts(data)
    distinct = qs[:max(1, queries // 4)]
    types = ("note", "change", "decision", "note", "summary")
    rows: list[dict[str, Any]] = []
    emb = bench_embedder() if "hybrid" in modes else None
    with tempfile.TemporaryDirectory(prefix="ctxbench-mem-") as tmp:
        path = Path(tmp) / "memory.db"
        written = 0
        for n in record_counts:
            if progress is not None:
                progress.advance(0, note=f"writing {n:,} records")
            t0 = time.perf_counter()
            with MemoryStore.open(path, embeddings=False) as store:
                while written < n:
                    if progress is not None and written % 1000 == 0:
                        progress.advance(0, note=f"writing records: {written:,} of {n:,}")
                    text = f"{contents[written % len(contents)]} [r{written}]"
                    store.add(text, types[written % len(types)], session=f"s{written // 2000}", turn=written // 20,
                              merge=False, supersede=False)
                    written += 1
            row: dict[str, Any] = {"records": n, "write_s": round(time.perf_counter() - t0, 1)}
            for mode in modes:
                if mode == "hybrid" and emb is None:
                    row[mode] = {"skipped": "no embedding model installed"}
                    continue
                if progress is not None:
                    progress.advance(0, note=f"{n:,} records: searching ({mode})")
                with MemoryStore.open(path, embeddings=mode == "hybrid", embedder=emb) as store:
                    if mode == "hybrid":
                        give_vectors(store, emb)
                        store.search("warm up the index")  # loads the vectors: once per process
                    lat = time_searches(store, distinct, 3)
                row[mode] = {"queries": len(lat["first_ms"]) + len(lat["search_ms"]),
                             "p50_ms": round(percentile(lat["search_ms"], 50), 3),
                             "p95_ms": round(percentile(lat["search_ms"], 95), 3),
                             "first_p50_ms": round(percentile(lat["first_ms"], 50), 3),
                             "first_p95_ms": round(percentile(lat["first_ms"], 95), 3)}
            rows.append(row)
            if progress is not None:
                progress.advance(note=f"{n // 1000}k records")
    return rows


# name -> the text of n characters: a pattern's candidate start repeated (or one candidate before a
# long run), so any pass that scans from each candidate to the end of the text shows its square
ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "token=": lambda n: _repeat("token=", n),
    "a_key=": lambda n: _repeat("a_key=", n),
    "MYSQL_PWD=": lambda n: _repeat("MYSQL_PWD=", n),
    'password="': lambda n: _repeat('password="', n),
    "?token=": lambda n: _repeat("?token=", n),
    "BEGIN PRIVATE KEY": lambda n: _repeat("-----BEGIN PRIVATE KEY-----!", n),
    "x://a:": lambda n: _repeat("x://a:", n),
    "Bearer / Basic": lambda n: _repeat("Bearer Basic ", n),
    "aws_secret_access_key + spaces": lambda n: "aws_secret_access_key" + " " * (n - 22) + "x",
    "name run + _key=": lambda n: "a" * (n - 6) + "_key=x",
    # every rule of context/data/secret_rules.toml at once: their keywords, and their examples cut short
    "every rule's keyword =": lambda n: _repeat(_rule_seeds()[0], n),
    "every rule's example, cut": lambda n: _repeat(_rule_seeds()[1], n),
    "invisible characters in keys": lambda n: _repeat("sk-ant-\u200bghp_\u2060a\u00ad", n),
}


def _rule_seeds() -> tuple[str, str]:
    from ctxagent.context.floor.secret_rules import rules

    keywords = sorted({k for rule in rules() for k in rule.keywords})
    return " = ".join(keywords) + " = ", "\n".join(rule.example[:-3] for rule in rules()) + "\n"


def _repeat(seed: str, n: int) -> str:
    return (seed * (n // len(seed) + 1))[:n]


def _normal_text(data: Path | str | None, n: int) -> str:
    """Real tool output and replies (mini-swe-agent), repeated up to n characters."""
    pieces = [str(e.data.get("content") or e.data.get("text") or "") for e in _real_events(data, runs=20)]
    text = "\n".join(p for p in pieces if p) or _FALLBACK_TEXT
    return _repeat(text, n)


def _chars_per_s(fn: Callable[[str], Any], text: str, runs: int) -> tuple[float, float]:
    best = min(_timed(fn, text) for _ in range(max(1, runs)))
    return best, len(text) / best if best > 0 else float("inf")


def _timed(fn: Callable[[str], Any], text: str) -> float:
    # CPU time: on a machine shared with other work, wall time grows with the run's length (the
    # longer a run, the more often it waits for a core), which would read as a superlinear pass
    t0 = time.process_time()
    fn(text)
    return time.process_time() - t0


def bench_redaction(sizes: Sequence[int] = REDACTION_SIZES, data: Path | str | None = None,
                    progress: Any = None) -> list[dict[str, Any]]:
    """Per size: the sanitizer on real text, and on the slowest of the ADVERSARIAL inputs."""
    from ctxagent.context.floor.sanitize import Sanitizer

    sanitize = Sanitizer(["sk-ant-api03-bench-configured-key-0123456789"]).text  # as the log runs it: one configured key
    rows: list[dict[str, Any]] = []
    for n in sizes:
        runs = 3 if n <= 100_000 else 1
        secs, rate = _chars_per_s(sanitize, _normal_text(data, n), runs)
        rows.append({"input": "normal", "chars": n, "ms": round(secs * 1000, 2), "chars_per_s": round(rate)})
        worst: tuple[float, float, str] | None = None
        for name, make in ADVERSARIAL.items():
            secs, rate = _chars_per_s(sanitize, make(n), runs)
            if worst is None or rate < worst[1]:
                worst = (secs, rate, name)
        assert worst is not None
        rows.append({"input": "adversarial", "chars": n, "ms": round(worst[0] * 1000, 2), "chars_per_s": round(worst[1]),
                     "slowest": worst[2]})
        if progress is not None:
            progress.advance(note=f"redaction {n:,} chars")
    return rows


def _ctxagent_cmd() -> list[str]:
    script = Path(sys.executable).parent / "ctxagent"
    if script.exists():
        return [str(script)]
    found = shutil.which("ctxagent")
    return [found] if found else [sys.executable, "-m", "ctxagent.tui.cli"]


def bench_version(runs: int = 5) -> dict[str, Any]:
    cmd = [*_ctxagent_cmd(), "--version"]
    times = []
    out = ""
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        times.append((time.perf_counter() - t0) * 1000)
        out = proc.stdout.strip() or proc.stderr.strip()
    return {"command": " ".join(Path(cmd[0]).name if i == 0 else c for i, c in enumerate(cmd)),
            "output": out, "p50_ms": round(statistics.median(times), 1), "runs": runs}


# The app as `ctxagent` opens it: a real session on a real (scripted) model, in a fresh git repo.
_FIRST_FRAME = """
import asyncio, json, os, subprocess, sys, tempfile
from pathlib import Path
root = Path(tempfile.mkdtemp())
subprocess.run(["git", "init", "-q"], cwd=root, check=True)
script = root / "script.json"
script.write_text(json.dumps([{"text": "hello"}]))
from ctxagent.agent.config import Config
from ctxagent.agent.factory import create_agent
from ctxagent.agent.session import open_session
from ctxagent.tui.app.app import CtxApp
async def main():
    app = CtxApp(open_session(root, Config(model="scripted:" + str(script))), create_agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        sys.stdout.write("mounted " + type(app.screen).__name__ + "\\n")
        sys.stdout.flush()
asyncio.run(main())
"""


def bench_first_frame(runs: int = 3) -> dict[str, Any]:
    if importlib.util.find_spec("textual") is None:  # the app runs in a subprocess: agent/ never imports tui/
        return {"skipped": "textual is not installed"}
    times = []
    screen = ""
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", _FIRST_FRAME], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        elapsed = (time.perf_counter() - t0) * 1000
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        if not line.startswith("mounted"):
            return {"skipped": f"first frame not reached: {err.strip()[-300:]}"}
        screen = line.split()[-1]
        times.append(elapsed)
    return {"p50_ms": round(statistics.median(times), 1), "runs": runs, "first_screen": screen}


def perf_all(sizes: Sequence[int] = DEFAULT_SIZES, records: Sequence[int] = DEFAULT_RECORDS, steps: int = 5,
             data: Path | str | None = None, progress: Any = None) -> dict[str, Any]:
    # the phases' costs are rough guesses (the ETA sharpens once each has run): a builder size is a few
    # seconds per 100k tokens, a memory size about a minute per 10k records written, start-up a few seconds
    phases = [("builder", len(sizes), 1.0), ("memory search", len(records), 6.0),
              ("redaction", len(REDACTION_SIZES), 0.5), ("start-up", 2, 0.5)]
    if progress is not None and hasattr(progress, "plan"):
        progress.plan(phases[1:])
        progress.phase(*phases[0])
    builder = bench_builder(sizes, steps, data, progress)
    if progress is not None and hasattr(progress, "phase"):
        progress.phase(*phases[1])
    memory = bench_memory(records, data=data, progress=progress)
    if progress is not None and hasattr(progress, "phase"):
        progress.phase(*phases[2])
    redaction = bench_redaction(data=data, progress=progress)
    if progress is not None and hasattr(progress, "phase"):
        progress.phase(*phases[3])
    version = bench_version()
    if progress is not None:
        progress.advance(note="ctxagent --version")
    frame = bench_first_frame()
    if progress is not None:
        progress.advance(note="TUI first frame")
    return {"builder": builder, "memory_search": memory, "redaction": redaction, "version": version,
            "tui_first_frame": frame}
