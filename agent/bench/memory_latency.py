"""`ctxagent bench memory-latency`: search latency of the memory store as it grows (a benchmark, not a test).

Fills a fresh on-disk store with N synthetic but realistic records (decisions, constraints, changes
with file paths, test notes, todos; English, identifiers and Chinese), then times the product's own
queries — the warm block's recall search and typical search_memory calls — and reports p50 / p95.
Deterministic: the same N gives the same data (seeded generator).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from ctxagent.context.floor.display import echo, echo_json
from ctxagent.context.memory import MemoryStore
from ctxagent.context.memory.recall import MemoryRecall

_MODULES = ["auth", "login", "session", "db", "models", "parser", "cache", "config", "api", "routes", "utils",
            "billing", "search", "index", "worker", "queue", "render", "cli", "storage", "metrics"]
_VERBS = ["use", "switch to", "keep", "prefer", "avoid", "drop", "wrap", "rename", "split", "inline"]
_THINGS = ["PostgreSQL", "Redis", "SQLAlchemy", "pydantic", "httpx", "asyncio", "dataclasses", "JWT tokens",
           "a retry decorator", "the connection pool", "structured logging", "type hints", "pathlib", "orjson"]
_ZH = ["用户登录使用 JWT 认证", "不要修改配置文件", "缓存过期时间设为 60 秒", "数据库迁移放在 migrations 目录",
       "接口返回统一的错误码", "日志不要打印密码"]
QUERIES = ["fix the login bug in auth", "which database do we use", "getUserName returns None", "改一下登录逻辑",
           "why do the cache tests fail", "src/billing/invoice.py", "retry policy for the queue worker",
           "config settings for storage", "rename parse_header", "what did we decide about logging"]


def _record(rng: random.Random, i: int) -> tuple[str, str, list[str], int]:
    mod = rng.choice(_MODULES)
    path = f"src/{mod}/{rng.choice(_MODULES)}_{rng.randrange(50)}.py"
    turn = i // 10 + 1
    kind = rng.random()
    if kind < 0.45:
        return f"edited {path} lines {rng.randrange(1, 400)}-{rng.randrange(400, 800)}", "change", [path], turn
    if kind < 0.60:
        return f"tests: {rng.randrange(200)} passed, {rng.randrange(5)} failed — tests/test_{mod}.py", "note", [], turn
    if kind < 0.75:
        return f"We {rng.choice(_VERBS)} {rng.choice(_THINGS)} in the {mod} module (case {i})", "decision", [], turn
    if kind < 0.85:
        return f"{rng.choice(_ZH)}（{mod} 模块，记录 {i}）", "note", [], turn
    if kind < 0.87:
        return f"TODO handle{mod.capitalize()}Error in {path} (item {i})", "todo", [path], turn
    return f"note {i}: the {mod} layer calls {rng.choice(_MODULES)}_client.fetch_{rng.choice(_MODULES)}()", "note", [], turn


def fill(store: MemoryStore, n: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    for i in range(n):
        content, type_, files, turn = _record(rng, i)
        # most todos of a long history are done; a few constraints stay pinned
        status = ("open" if rng.random() < 0.01 else "done") if type_ == "todo" else None
        store.add(content, type_, files=files, session=f"s{i // 2000}", turn=turn, merge=False, supersede=False,
                  pinned=False, status=status)


class _Chars:
    def count(self, text: str) -> int:
        return len(text) // 4 + 1


def run_memory_latency(n: int = 100_000, repeats: int = 20, db_dir: str | Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(dir=db_dir) as tmp:
        store = MemoryStore.open(Path(tmp) / "memory.db")
        t0 = time.perf_counter()
        fill(store, n)
        fill_s = time.perf_counter() - t0
        search_ms: list[float] = []
        search_cpu_ms: list[float] = []  # CPU time: honest on a loaded machine, where wall time is not
        for _ in range(repeats):
            for q in QUERIES:
                t, c = time.perf_counter(), time.process_time()
                store.search(q, limit=8)
                search_ms.append((time.perf_counter() - t) * 1000)
                search_cpu_ms.append((time.process_time() - c) * 1000)
        recall = MemoryRecall(store, "s0", age=False)
        warm_ms: list[float] = []
        for _ in range(max(1, repeats // 4)):
            for q in QUERIES:
                t = time.perf_counter()
                recall.records(q, ["src/auth/login_3.py"], 10)
                warm_ms.append((time.perf_counter() - t) * 1000)
        store.close()

    def pct(xs: list[float]) -> dict[str, float]:
        s = sorted(xs)
        return {"p50": round(statistics.median(s), 3), "p95": round(s[min(len(s) - 1, int(len(s) * 0.95))], 3),
                "max": round(s[-1], 3)}

    return {"records": n, "fill_seconds": round(fill_s, 1), "search_ms": pct(search_ms), "search_cpu_ms": pct(search_cpu_ms), "warm_records_ms": pct(warm_ms),
            "queries": len(search_ms)}


def add_parser(bench_subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = bench_subparsers.add_parser("memory-latency", help="memory search latency at N records (default 100k)")
    p.add_argument("--records", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)
    return p


def _run(args: argparse.Namespace) -> int:
    r = run_memory_latency(args.records, args.repeats)
    cpu = r["search_cpu_ms"]
    if args.json:
        echo_json(r, indent=1)
    else:
        echo(f"{r['records']} records (filled in {r['fill_seconds']} s): search p50 {r['search_ms']['p50']} ms, "
             f"p95 {r['search_ms']['p95']} ms (CPU p50 {cpu['p50']} ms, p95 {cpu['p95']} ms); warm-block recall p50 {r['warm_records_ms']['p50']} ms, "
             f"p95 {r['warm_records_ms']['p95']} ms")
    return 0
