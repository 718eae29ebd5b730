"""`ctxagent bench locomo`: evidence recall@k of memory search on LoCoMo long conversations.

Strategies, all on the same data in the same run, no model call anywhere:

- `ctxagent` — each turn (with its image caption) is one note in a fresh in-memory MemoryStore,
  written with the product's own `add` and found with its `search` (the same tokenizer, query
  expansion and column weights the agent uses). The record holds what the product would hold: the
  turn, its session and its position — nothing the product's writers do not produce.
- `ctxagent-ingest` — the conversation replayed as session-log events (the first speaker as the
  user, the second as the assistant) through the product's session ingest (`MemoryStore.ingest`),
  which keeps only the constraints, decisions and todos it detects; each record maps back to the
  turn it came from. This is what the agent remembers of a conversation today.
- `ctxagent+harness` — NOT the product: the notes also get each turn's neighbouring turns as
  context and the session date as a tag, which no product writer produces. Kept, labelled, to show
  what such context would be worth.
- `bm25` — FTS5 unicode61 over the raw turn text, the question's words OR'ed.

Score: for each question, the fraction of its evidence turns found among the top-k retrieved turns;
averaged per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial) and
over categories 1–4 together ("all_1_4"). Evidence ids that do not resolve to a turn are skipped
and counted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxagent.context.memory.store import MemoryStore

STRATEGIES = ("ctxagent", "ctxagent-ingest", "ctxagent+harness", "bm25")
HEADLINE = "ctxagent"  # the product's retrieval over what its writers store; the others are context for it
_ID_SPLIT = re.compile(r"[;,\s]+")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str
    session: int
    date: str

    def document(self) -> str:
        extra = f" [shares an image: {self.caption}]" if self.caption else ""
        return f"{self.speaker}: {self.text}{extra}"


def default_data_path() -> Path:
    """$CTXAGENT_BENCH_DATA (the bench root, the locomo folder, or the file), else ../shared/bench beside the repo."""
    env = os.environ.get("CTXAGENT_BENCH_DATA")
    base = Path(env) if env else Path(__file__).resolve().parents[2].parent / "shared" / "bench"
    for candidate in (base, base / "locomo" / "locomo5.json", base / "locomo5.json"):
        if candidate.is_file():
            return candidate
    return base / "locomo" / "locomo5.json"


def load_conversations(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    if p.is_dir():
        p = p / "locomo" / "locomo5.json" if (p / "locomo").is_dir() else p / "locomo5.json"
    data = json.loads(p.read_text(encoding="utf-8"))
    return data if isinstance(data, list) else [data]


def conversation_turns(conv: dict[str, Any]) -> list[Turn]:
    c = conv["conversation"]
    numbers = sorted(int(m.group(1)) for k in c if (m := re.fullmatch(r"session_(\d+)", k)) and isinstance(c[k], list))
    out: list[Turn] = []
    for n in numbers:
        date = str(c.get(f"session_{n}_date_time", ""))
        for t in c[f"session_{n}"]:
            out.append(Turn(str(t.get("dia_id", "")), str(t.get("speaker", "")), str(t.get("text", "")),
                            str(t.get("blip_caption") or ""), n, date))
    return out


def evidence_ids(qa: dict[str, Any]) -> list[str]:
    ids: list[str] = []
    for ev in qa.get("evidence") or []:
        ids += [x for x in _ID_SPLIT.split(str(ev)) if x]
    return list(dict.fromkeys(ids))


# ------------------------------------------------------------------------ retrievers

def product_retriever(turns: list[Turn], harness_context: bool = False) -> Callable[[str, int], list[str]]:
    """The product's search over one note per turn, written with the product's `add`. `harness_context`:
    the labelled variant that also gives each note its neighbouring turns and the session date."""
    store = MemoryStore.open(":memory:")
    by_record: dict[int, str] = {}
    for i, t in enumerate(turns):
        extra: dict[str, Any] = {}
        if harness_context:
            near = " ".join(turns[j].document() for j in (i - 1, i + 1)
                            if 0 <= j < len(turns) and turns[j].session == t.session)
            extra = {"context": near, "tags": [t.date] if t.date else []}
        rid = store.add(t.document(), "note", session=f"s{t.session}", turn=i + 1, merge=False, supersede=False, **extra)
        by_record[rid] = t.dia_id

    def retrieve(question: str, k: int) -> list[str]:
        return [by_record[r.id] for r in store.search(question, limit=k)]

    return retrieve


def ingest_retriever(turns: list[Turn]) -> Callable[[str, int], list[str]]:
    """The product's session ingest over the conversation (first speaker = user), then its search."""
    from ctxagent.context.history import Event

    store = MemoryStore.open(":memory:")
    first = turns[0].speaker if turns else ""
    dia: dict[tuple[str, int], str] = {}
    by_session: dict[int, list[Event]] = {}
    for t in turns:
        events = by_session.setdefault(t.session, [])
        kind = "user" if t.speaker == first else "assistant"
        data: dict[str, Any] = {"text": t.document()}
        if kind == "user":
            data["turn"] = sum(1 for e in events if e.kind == "user") + 1
        dia[(f"s{t.session}", len(events))] = t.dia_id
        events.append(Event(len(events), kind, data))
    for n, events in by_session.items():
        store.ingest(events, f"s{n}")

    def retrieve(question: str, k: int) -> list[str]:
        found: dict[str, None] = {}
        for r in store.search(question, limit=4 * k):
            for ev in r.source_events:
                if (r.session, ev) in dia:
                    found.setdefault(dia[(r.session, ev)], None)
        return list(found)[:k]

    return retrieve


def bm25_retriever(turns: list[Turn]) -> Callable[[str, int], list[str]]:
    """Plain BM25: FTS5 unicode61 over the raw turn text; every word of the question OR'ed."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='unicode61')")
    conn.executemany("INSERT INTO t (rowid, body) VALUES (?, ?)", [(i, t.document()) for i, t in enumerate(turns)])

    def retrieve(question: str, k: int) -> list[str]:
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(question)))
        if not words:
            return []
        expr = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (expr, k)).fetchall()
        return [turns[r[0]].dia_id for r in rows]

    return retrieve


# -------------------------------------------------------------------------- scoring

def run_locomo(path: str | Path, ks: list[int] | tuple[int, ...] = (5, 10, 20)) -> dict[str, Any]:
    ks = sorted({int(k) for k in ks})
    kmax = ks[-1]
    sums: dict[str, dict[int, dict[str, list[float]]]] = {s: {k: {} for k in ks} for s in STRATEGIES}
    latencies: list[float] = []
    skipped = 0
    questions = 0
    conversations = load_conversations(path)
    for conv in conversations:
        turns = conversation_turns(conv)
        known = {t.dia_id for t in turns}
        retrievers = {"ctxagent": product_retriever(turns), "ctxagent-ingest": ingest_retriever(turns),
                      "ctxagent+harness": product_retriever(turns, harness_context=True), "bm25": bm25_retriever(turns)}
        for qa in conv.get("qa") or []:
            ids = evidence_ids(qa)
            good = [x for x in ids if x in known]
            skipped += len(ids) - len(good)
            if not good:
                continue
            questions += 1
            cat = str(qa.get("category", "?"))
            for name, retrieve in retrievers.items():
                t0 = time.perf_counter()
                got = retrieve(str(qa.get("question", "")), kmax)
                if name == "ctxagent":
                    latencies.append((time.perf_counter() - t0) * 1000)
                for k in ks:
                    hit = len(set(got[:k]) & set(good)) / len(good)
                    sums[name][k].setdefault(cat, []).append(hit)
    result: dict[str, Any] = {"k": ks, "strategy": {}, "questions": questions, "conversations": len(conversations)}
    for name in STRATEGIES:
        per_k: dict[str, dict[str, float]] = {}
        for k in ks:
            cats = sums[name][k]
            row = {c: round(statistics.fmean(v), 4) for c, v in sorted(cats.items())}
            core = [x for c, v in cats.items() if c in ("1", "2", "3", "4") for x in v]
            row["all_1_4"] = round(statistics.fmean(core), 4) if core else 0.0
            per_k[f"recall@{k}"] = row
        result["strategy"][name] = per_k
    lat = sorted(latencies)
    result["latency_ms"] = {
        "p50": round(lat[len(lat) // 2], 3) if lat else 0.0,
        "p95": round(lat[min(len(lat) - 1, int(len(lat) * 0.95))], 3) if lat else 0.0,
    }
    result["skipped_evidence"] = skipped
    return result


def format_table(result: dict[str, Any]) -> str:
    cats = ["1", "2", "3", "4", "5", "all_1_4"]
    lines = [f"LoCoMo evidence recall@k — {result['conversations']} conversations, {result['questions']} questions, "
             f"{result['skipped_evidence']} unresolved evidence ids skipped",
             f"{'strategy':<17} {'k':>3}  " + "  ".join(f"{c:>7}" for c in cats)]
    for name, per_k in result["strategy"].items():
        for key, row in per_k.items():
            lines.append(f"{name:<17} {key.split('@')[1]:>3}  " + "  ".join(f"{row.get(c, 0.0):>7.3f}" for c in cats))
    lat = result["latency_ms"]
    lines.append(f"ctxagent search latency: p50 {lat['p50']:.2f} ms, p95 {lat['p95']:.2f} ms")
    if "ctxagent+harness" in result["strategy"]:
        lines.append("ctxagent+harness is not the product: its notes also carry the neighbouring turns and the session "
                     "date, which no product writer stores. ctxagent-ingest is what the session ingest keeps today.")
    return "\n".join(lines)


def add_parser(bench_subparsers: Any) -> argparse.ArgumentParser:
    p = bench_subparsers.add_parser("locomo", help="memory retrieval recall@k on LoCoMo conversations (no model call)")
    p.add_argument("--data", default=None, help="LoCoMo JSON file or bench folder (default: $CTXAGENT_BENCH_DATA or ../shared/bench)")
    p.add_argument("--k", default="5,10,20", help="comma-separated k values (default 5,10,20)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_run)
    return p


def _run(args: argparse.Namespace) -> int:
    path = Path(args.data) if args.data else default_data_path()
    if not path.exists():
        print(f"error: no LoCoMo data at {path} (use --data or CTXAGENT_BENCH_DATA)")
        return 2
    ks = [int(x) for x in str(args.k).split(",") if x.strip()]
    result = run_locomo(path, ks)
    print(json.dumps(result, indent=1) if args.json else format_table(result))
    return 0
