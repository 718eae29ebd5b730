"""The benchmarks' shared options and outputs: windows per source, the replay's options, the number of
processes, the memory store they open, and how a result is written (the command line, tui/cli/bench.py,
and the fits that run replays themselves, watermark_fit.py, read them here)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from ctxagent.context.floor.display import echo, echo_json

DEFAULT_WINDOWS = {"claude-code": 200_000, "mini-swe-agent": 32_000, "swe-agent": 32_000, "openhands": 32_000}

# `bench all` also replays these (the smaller windows), with the source's estimated prefix and with
# ctxagent's own (Claude Code's ~26k of system prompt and tools leave little of a 32k window)
SWEEP = {"claude-code": ((48_000, "auto"), (32_000, "auto"), (48_000, "product"), (32_000, "product"))}

def csv_ints(text: str) -> list[int]:
    return [int(x.replace("_", "").replace("k", "000")) for x in text.split(",") if x.strip()]

def sources(text: str) -> list[str]:
    from ctxagent.tui.lab.bench.readers import SOURCES

    names = [s.strip() for s in text.split(",") if s.strip()]
    if names == ["all"]:
        return list(SOURCES)
    bad = [n for n in names if n not in SOURCES]
    if bad:
        raise SystemExit(f"ctxagent bench: unknown source {', '.join(bad)}; choose from {', '.join(SOURCES)}")
    return names

def emit(args: argparse.Namespace, results: list[dict[str, Any]], render: Any) -> None:
    payload: Any = results[0] if len(results) == 1 else results
    if getattr(args, "out", None):
        write_atomically(Path(args.out), json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    if args.json:
        echo_json(payload, indent=2)
    else:
        echo("\n\n".join(render(r) for r in results))

def write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename: a reader never sees half a result."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)

def partial_path(args: argparse.Namespace) -> Path | None:
    """Where per-run results stream to: beside --out (X.partial.jsonl); --fresh starts it over."""
    out = getattr(args, "out", None)
    if not out:
        return None
    path = Path(f"{out}.partial.jsonl")
    if getattr(args, "fresh", False) and path.exists():
        path.unlink()
    return path

def job_count(args: argparse.Namespace) -> int:
    jobs = getattr(args, "jobs", None)
    return max(1, int(jobs)) if jobs else max(1, os.cpu_count() or 1)

def memory_store(args: argparse.Namespace) -> Any:
    """ctxagent's memory store with its embeddings remembered (embed_memo.py), unless --embed-cache none."""
    choice = getattr(args, "embed_cache", None)
    if choice == "none":
        return None
    from ctxagent.tui.lab.bench.embed_memo import MemoStoreOpener, default_cache_path

    return MemoStoreOpener(Path(choice) if choice else default_cache_path())

def overhead_option(text: str) -> str:
    if text in ("auto", "none", "product") or text.isdigit():
        return text
    raise SystemExit(f"ctxagent bench: --overhead must be auto, none, product or a number of tokens, not {text!r}")

def replay_options(q: argparse.ArgumentParser) -> None:
    q.add_argument("--jobs", type=int, help="processes for the replay (default: the number of CPUs; the result is the "
                                            "same as with 1)")
    q.add_argument("--fresh", action="store_true", help="ignore the per-run results of an earlier run with the same --out "
                                                        "(OUT.partial.jsonl) instead of resuming from them")
    q.add_argument("--embed-cache", help="where ctxagent's memory embeddings are remembered across runs (a SQLite file; "
                                         "default under ~/.cache/ctxagent), or none")
