"""The LoCoMo retrieval benchmark on a tiny hand-made file, and (read-only, if present) the real one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ctxagent.agent.bench.locomo import conversation_turns, evidence_ids, run_locomo

TINY = [{
    "sample_id": "tiny-1",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Bo",
        "session_1_date_time": "1:00 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Bo! I adopted a puppy named Biscuit last week."},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "Congrats! What breed is Biscuit?"},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "A beagle. Here is a photo.", "blip_caption": "a beagle on a red couch"},
        ],
        "session_2_date_time": "2:00 pm on 20 June, 2023",
        "session_2": [
            {"speaker": "Bo", "dia_id": "D2:1", "text": "I started pottery classes on Tuesday evenings."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Nice, I ran my first marathon in Lisbon."},
        ],
        "session_3_date_time": "9 July, 2023",
    },
    "qa": [
        {"question": "What is the name of Ana's puppy?", "answer": "Biscuit", "evidence": ["D1:1"], "category": 4},
        {"question": "What color is the couch in Ana's photo?", "answer": "red", "evidence": ["D1:3"], "category": 1},
        {"question": "When did Bo start pottery?", "answer": "June 2023", "evidence": ["D2:1; D9:9"], "category": 2},
        {"question": "Where did Ana run a marathon?", "answer": 2023, "evidence": ["D2:2", "D1:1"], "category": 3},
        {"question": "What did Bo say about skydiving?", "adversarial_answer": "nothing", "evidence": ["D2:1"], "category": 5},
        {"question": "Unresolvable", "answer": "x", "evidence": ["D7:1"], "category": 4},
    ],
}]


def test_locomo_parsing_helpers() -> None:
    turns = conversation_turns(TINY[0])
    assert [t.dia_id for t in turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert "a beagle on a red couch" in turns[2].document()
    assert evidence_ids({"evidence": ["D8:6; D9:17", "D1:2,D1:3 D1:4"]}) == ["D8:6", "D9:17", "D1:2", "D1:3", "D1:4"]


def test_run_locomo_on_tiny_file(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY), encoding="utf-8")
    r = run_locomo(path, [1, 2])
    assert r["k"] == [1, 2] and r["questions"] == 5 and r["skipped_evidence"] == 2
    ours = r["strategy"]["ctxagent"]
    assert set(ours) == {"recall@1", "recall@2"}
    assert set(ours["recall@2"]) == {"1", "2", "3", "4", "5", "all_1_4"}
    assert ours["recall@1"]["4"] == 1.0  # Biscuit → D1:1
    assert ours["recall@2"]["1"] == 1.0  # the caption is searchable
    assert ours["recall@2"]["3"] == 0.5  # one of its two evidence turns found
    assert 0.0 <= r["strategy"]["bm25"]["recall@2"]["all_1_4"] <= 1.0
    assert r["latency_ms"]["p95"] >= r["latency_ms"]["p50"] >= 0.0


def test_bench_locomo_cli_json(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY), encoding="utf-8")
    code = (
        "import argparse, sys\n"
        "from ctxagent.agent.bench import locomo\n"
        "p = argparse.ArgumentParser(); sub = p.add_subparsers(); locomo.add_parser(sub)\n"
        "a = p.parse_args(sys.argv[1:]); sys.exit(a.func(a))\n"
    )
    r = subprocess.run([sys.executable, "-c", code, "locomo", "--data", str(path), "--k", "1,3", "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["k"] == [1, 3] and set(out["strategy"]) == {"ctxagent", "bm25"}
    assert "p95" in out["latency_ms"] and out["skipped_evidence"] == 2


REAL = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "locomo" / "locomo5.json"


@pytest.mark.skipif(not REAL.exists(), reason="LoCoMo data not present")
def test_real_locomo_beats_plain_bm25() -> None:
    r = run_locomo(REAL, [10])
    ours = r["strategy"]["ctxagent"]["recall@10"]["all_1_4"]
    base = r["strategy"]["bm25"]["recall@10"]["all_1_4"]
    assert ours >= 0.65 and ours > base
