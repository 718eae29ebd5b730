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


DISTINCT_VECTORS = 256  # texts the model embeds for the hybrid mode; record i gets the vector of text i % 256


def give_vectors(store: MemoryStore, embedder: Any, distinct: int = DISTINCT_VECTORS) -> float:
    """A vector for every record without embedding 100k texts (minutes on a laptop's CPU): the first
    `distinct` records' vectors, the model's own, reused in turn. What a search costs depends on how
    many vectors there are, not on which; seconds spent embedding."""
    import numpy as np

    rows = store.conn.execute("SELECT id, content FROM records ORDER BY id").fetchall()
    if not rows:
        return 0.0
    t0 = time.perf_counter()
    vecs = np.asarray(embedder.passages([c for _, c in rows[:distinct]]), dtype=np.float32)
    spent = time.perf_counter() - t0
    with store._write() as conn:
        conn.executemany("INSERT OR REPLACE INTO record_vectors (record_id, model, vec) VALUES (?, ?, ?)",
                         ((int(rid), embedder.name, vecs[i % len(vecs)].tobytes()) for i, (rid, _) in enumerate(rows)))
    return spent


def bench_embedder() -> Any:
    """The installed model behind the bench's memo of its vectors (embed_memo.py), or None."""
    from ctxagent.tui.lab.bench.embed_memo import default_cache_path, memo_embedder

    return memo_embedder(default_cache_path())


def time_searches(store: MemoryStore, queries: list[str], repeats: int) -> dict[str, list[float]]:
    """Wall and CPU milliseconds of each search; the first pass asks each query for the first time
    (`first_ms`: with the model, its query vector is embedded), the later ones again (`search_ms`)."""
    out: dict[str, list[float]] = {"first_ms": [], "search_ms": [], "search_cpu_ms": []}
    for rnd in range(repeats + 1):
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            store.search(q, limit=8)
            wall, cpu = (time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000
            if rnd == 0:
                out["first_ms"].append(wall)
            else:
                out["search_ms"].append(wall)
                out["search_cpu_ms"].append(cpu)
    return out


def pct(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    s = sorted(xs)
    return {"p50": round(statistics.median(s), 3), "p95": round(s[min(len(s) - 1, int(len(s) * 0.95))], 3),
            "max": round(s[-1], 3)}


def run_memory_latency(n: int = 100_000, repeats: int = 20, db_dir: str | Path | None = None,
                       modes: tuple[str, ...] = ("bm25", "hybrid")) -> dict[str, Any]:
    """Both modes on the same records in one run: `bm25` (no model) and `hybrid` (the installed
    model, left out and said so without it)."""
    out: dict[str, Any] = {"records": n}
    with tempfile.TemporaryDirectory(dir=db_dir) as tmp:
        path = Path(tmp) / "memory.db"
        with MemoryStore.open(path, embeddings=False) as store:
            t0 = time.perf_counter()
            fill(store, n)
            out["fill_seconds"] = round(time.perf_counter() - t0, 1)
            recall = MemoryRecall(store, "s0", age=False)
            warm_ms: list[float] = []
            for _ in range(max(1, repeats // 4)):
                for q in QUERIES:
                    t = time.perf_counter()
                    recall.records(q, ["src/auth/login_3.py"], 10)
                    warm_ms.append((time.perf_counter() - t) * 1000)
            out["warm_records_ms"] = pct(warm_ms)  # the builder's recall: BM25 in both modes
        for mode in modes:
            emb = bench_embedder() if mode == "hybrid" else None
            if mode == "hybrid" and emb is None:
                out[mode] = {"skipped": "no embedding model installed"}
                continue
            with MemoryStore.open(path, embeddings=mode == "hybrid", embedder=emb) as store:
                row: dict[str, Any] = {}
                if emb is not None:
                    row["embed_seconds"] = round(give_vectors(store, emb), 1)
                    store.search("warm up the index")  # loads the vectors: once per process
                times = time_searches(store, QUERIES, repeats)
                row.update({k: pct(v) for k, v in times.items()})
                row["queries"] = len(times["search_ms"]) + len(times["first_ms"])
                out[mode] = row
    return out


def add_parser(bench_subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = bench_subparsers.add_parser("memory-latency", help="memory search latency at N records (default 100k)")
    p.add_argument("--records", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--mode", choices=("both", "bm25", "hybrid"), default="both")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)
    return p


def _run(args: argparse.Namespace) -> int:
    modes = ("bm25", "hybrid") if args.mode == "both" else (args.mode,)
    r = run_memory_latency(args.records, args.repeats, modes=modes)
    if args.json:
        echo_json(r, indent=1)
        return 0
    warm = r["warm_records_ms"]
    echo(f"{r['records']} records (filled in {r['fill_seconds']} s); warm-block recall p50 {warm['p50']} ms, p95 {warm['p95']} ms")
    for mode in modes:
        row = r[mode]
        if "skipped" in row:
            echo(f"  {mode}: skipped ({row['skipped']})")
            continue
        s, c, f = row["search_ms"], row["search_cpu_ms"], row["first_ms"]
        echo(f"  {mode}: search p50 {s['p50']} ms, p95 {s['p95']} ms (CPU p50 {c['p50']}, p95 {c['p95']}); "
              f"a query's first time p50 {f['p50']} ms, p95 {f['p95']} ms")
    return 0
