"""`ctxagent bench replay|tokens|perf|locomo|all`: benchmarks on real agent traffic (commands, not tests).

Data: `--data PATH`, else $CTXAGENT_BENCH_DATA, else `../shared/bench` beside the repository.
Progress goes to stderr; results to stdout (a table, or JSON with --json).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from ctxagent.context.floor.display import echo, echo_json
from ctxagent.tui.cli.commands import add_command
from ctxagent.tui.lab.bench.options import (
    DEFAULT_WINDOWS,
    SWEEP,
    csv_ints,
    emit,
    job_count,
    memory_store,
    overhead_option,
    partial_path,
    replay_options,
    sources,
    write_atomically,
)


def run_replay(args: argparse.Namespace) -> int:
    from ctxagent.tui.lab.bench.cache_cost import RULES
    from ctxagent.tui.lab.bench.progress import Progress
    from ctxagent.tui.lab.bench.readers import read_source
    from ctxagent.tui.lab.bench.replay_run import replay_source
    from ctxagent.tui.lab.bench.replay_setup import STRATEGIES
    from ctxagent.tui.lab.bench.replay_tables import replay_text

    strategies = list(STRATEGIES) if args.strategy == "all" else [s.strip() for s in args.strategy.split(",") if s.strip()]
    bad = [s for s in strategies if s not in STRATEGIES]
    if bad:
        echo(f"ctxagent bench: unknown strategy {', '.join(bad)}; choose from {', '.join(STRATEGIES)}", err=True)
        return 2
    if args.cache_rules is not None and args.cache_rules not in RULES:
        echo(f"ctxagent bench: unknown cache rules {args.cache_rules}; choose from {', '.join(RULES)}", err=True)
        return 2
    overhead = overhead_option(args.overhead)
    results = []
    partial = partial_path(args)
    for source in sources(args.source):
        read = read_source(source, args.data, args.limit)
        for window in args.window or [DEFAULT_WINDOWS[source]]:
            with Progress(len(read.trajectories), f"replay {source} W={window:,}") as bar:
                res = replay_source(read.trajectories, window, strategies, progress=bar, use_memory=not args.no_memory,
                                    rules=RULES[args.cache_rules] if args.cache_rules else None, overhead=overhead,
                                    jobs=job_count(args), partial=partial, memory_store=memory_store(args))
            for k, v in read.skipped.items():  # unreadable files / runs, beside the per-record skips
                if k not in res["skipped"]:
                    res["skipped"][k] = v
            if source == "claude-code":  # the runs' real sub-agents: their calls in a row of their own
                from ctxagent.tui.lab.bench.readers import source_path
                from ctxagent.tui.lab.bench.subagents import replay_section

                section = replay_section(source_path(source, args.data), {t.run_id for t in read.trajectories})
                if section is not None:
                    res["subagents"] = section
            results.append(res)
    emit(args, results, replay_text)
    return 0


def run_tokens(args: argparse.Namespace) -> int:
    from ctxagent.tui.lab.bench.progress import Progress
    from ctxagent.tui.lab.bench.readers import read_source
    from ctxagent.tui.lab.bench.tables import tokens_text
    from ctxagent.tui.lab.bench.tokens_bench import tokens_source

    results = []
    for source in sources(args.source):
        read = read_source(source, args.data, args.limit)
        with Progress(len(read.trajectories), f"tokens {source}") as bar:
            results.append(tokens_source(read.trajectories, progress=bar, per_call=args.per_call))
    emit(args, results, tokens_text)
    return 0


def run_perf(args: argparse.Namespace) -> int:
    from ctxagent.tui.lab.bench.perf import perf_all
    from ctxagent.tui.lab.bench.progress import Progress
    from ctxagent.tui.lab.bench.tables import perf_text

    sizes, records = csv_ints(args.sizes), csv_ints(args.records)
    with Progress(0, "perf") as bar:
        res = perf_all(sizes, records, args.steps, args.data, bar)
    emit(args, [res], perf_text)
    return 0


def _locomo_module() -> Any:
    try:
        from ctxagent.tui.lab.bench import locomo
    except ImportError:
        return None
    return locomo


def run_all(args: argparse.Namespace) -> int:
    """Every benchmark with its default settings; JSON to --out, tables (Markdown) to stdout."""
    from ctxagent.tui.lab.bench.perf import perf_all
    from ctxagent.tui.lab.bench.progress import Progress
    from ctxagent.tui.lab.bench.readers import SOURCES, read_source
    from ctxagent.tui.lab.bench.replay_run import replay_source
    from ctxagent.tui.lab.bench.replay_tables import replay_text, sweep_text
    from ctxagent.tui.lab.bench.tables import perf_text, tokens_text
    from ctxagent.tui.lab.bench.tokens_bench import tokens_source

    started = time.time()
    out: dict[str, Any] = {"replay": [], "sweep": [], "tokens": [], "perf": None, "locomo": None}
    partial, jobs, memory = partial_path(args), job_count(args), memory_store(args)
    for source in SOURCES:
        read = read_source(source, args.data, args.limit)
        with Progress(len(read.trajectories), f"replay {source}") as bar:
            out["replay"].append(replay_source(read.trajectories, DEFAULT_WINDOWS[source], progress=bar, jobs=jobs,
                                               partial=partial, memory_store=memory))
        for window, overhead in SWEEP.get(source, ()):
            with Progress(len(read.trajectories), f"replay {source} W={window:,} ({overhead})") as bar:
                out["sweep"].append(replay_source(read.trajectories, window, progress=bar, overhead=overhead, jobs=jobs,
                                                  partial=partial, memory_store=memory))
        if any(c.reported for t in read.trajectories for c in t.calls):
            with Progress(len(read.trajectories), f"tokens {source}") as bar:
                out["tokens"].append(tokens_source(read.trajectories, progress=bar))
    if not args.skip_perf:
        with Progress(0, "perf") as bar:
            out["perf"] = perf_all(data=args.data, progress=bar)
    locomo = _locomo_module()
    if locomo is not None and hasattr(locomo, "run_locomo") and not args.skip_locomo:
        try:
            out["locomo"] = locomo.run_locomo(args.data or locomo.default_data_path())
        except Exception as exc:  # the memory engineer's part: report instead of failing the run
            out["locomo"] = {"error": f"{type(exc).__name__}: {exc}"}
    out["seconds"] = round(time.time() - started, 1)
    if args.out:
        write_atomically(Path(args.out), json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    if args.json:
        echo_json(out, indent=2)
        return 0
    parts = [replay_text(r, md=True) for r in out["replay"]]
    if out["sweep"]:
        parts.append(sweep_text([r for r in out["replay"] if r["source"] == "claude-code"] + out["sweep"], md=True))
    parts.append(tokens_text_all(out["tokens"], tokens_text))
    if out["perf"]:
        parts.append(perf_text(out["perf"], md=True))
    if out["locomo"] and "error" not in out["locomo"] and hasattr(locomo, "format_table"):
        parts.append(locomo.format_table(out["locomo"]))
    echo("\n\n".join(p for p in parts if p))
    return 0


def tokens_text_all(results: list[dict[str, Any]], tokens_text: Any) -> str:
    if not results:
        return ""
    tables = [tokens_text(r, md=True).splitlines() for r in results]
    return "\n".join(tables[0] + [ln for t in tables[1:] for ln in t[2:]])


def add_parser(subparsers: Any) -> None:
    p = add_command(subparsers, "bench")
    sub = p.add_subparsers(dest="bench_command", metavar="BENCH")
    def usage(_: argparse.Namespace) -> int:
        p.print_help(sys.stderr)
        return 2

    p.set_defaults(func=usage)

    def common(q: argparse.ArgumentParser, source: bool = True) -> None:
        if source:
            q.add_argument("--source", default="mini-swe-agent",
                           help="claude-code|mini-swe-agent|swe-agent|openhands, a comma list, or all")
            q.add_argument("--limit", type=int, help="a stable sample of K runs per source, spread over repositories "
                                                     "(chosen by hash, the same on every machine)")
        q.add_argument("--data", help="bench data root or a source's folder/file (default $CTXAGENT_BENCH_DATA or ../shared/bench)")
        q.add_argument("--json", action="store_true", help="print JSON instead of a table")
        q.add_argument("--out", help="also write the JSON result to this file")

    r = sub.add_parser("replay", help="replay trajectories through the builder per strategy at every original call")
    common(r)
    r.add_argument("--window", type=csv_ints, help="window W in tokens, or a comma list (a sweep; 48k is fine) "
                   "(default: 200000 for claude-code, else 32000)")
    r.add_argument("--strategy", default="all",
                   help="all, or a comma list of full, window, ctxagent, last2+names, anthropic-clear, "
                        "anthropic-compact, openai-compact")
    r.add_argument("--no-memory", action="store_true", help="ctxagent without the memory store (session pins only)")
    r.add_argument("--cache-rules", help="prompt-cache pricing: anthropic or openai (default: anthropic for claude-code, "
                                        "else openai)")
    r.add_argument("--overhead", default="auto",
                   help="stable prefix added to every request: auto (the system prompt and tool schemas a transcript "
                        "lacks, estimated from the fit's intercept), none, product (ctxagent's own), or N tokens")
    replay_options(r)
    r.set_defaults(func=run_replay)

    t = sub.add_parser("tokens", help="raw vs calibrated local token counts against the reported prompt tokens")
    common(t)
    t.add_argument("--per-call", action="store_true", help="include every call's numbers in the JSON")
    t.set_defaults(func=run_tokens)

    f = sub.add_parser("perf", help="builder vs re-tokenizing, memory search latency, start-up times")
    common(f, source=False)
    f.add_argument("--sizes", default="10000,50000,100000,200000,500000", help="history sizes in tokens")
    f.add_argument("--records", default="10000,100000", help="memory store sizes in records")
    f.add_argument("--steps", type=int, default=5, help="timed steps per size (median)")
    f.set_defaults(func=run_perf)

    a = sub.add_parser("all", help="every benchmark with default settings (Markdown tables; JSON with --out)")
    common(a, source=False)
    a.add_argument("--limit", type=int, help="at most K runs per source")
    a.add_argument("--skip-perf", action="store_true", help="leave out the performance benchmark (the slowest)")
    a.add_argument("--skip-locomo", action="store_true", help="leave out the LoCoMo memory-retrieval benchmark")
    replay_options(a)
    a.set_defaults(func=run_all)

    # benchmarks that other parts own register themselves when their module is there
    for name in ("locomo", "memory_latency", "load", "large_tree", "mcp_schemas", "subagents", "watermark_fit",
                 "startup"):
        try:
            mod = importlib.import_module(f"ctxagent.tui.lab.bench.{name}")
        except ImportError:
            continue
        if hasattr(mod, "add_parser"):
            mod.add_parser(sub)
    p.description = (f"Benchmarks on real agent traffic: {', '.join(sub.choices)}. Data: --data, else "
                     "$CTXAGENT_BENCH_DATA, else ../shared/bench beside the repository.")
