"""The replay's tables: every table shows the baseline, and a line says which measures it also meets."""

from __future__ import annotations

from typing import Any

import pytest
from ctxagent.tui.lab.bench.replay_tables import baseline_note, main_rows, replay_text, sweep_text


def _strategy(tokens: int, retention: float, req: float, dec: float, cost: int, used: float = 0.9) -> dict[str, Any]:
    return {"tokens_sum": tokens, "tokens_mean": tokens / 10, "tokens_p95": tokens / 5, "prefix_reuse": 0.9,
            "overflows": 0, "failed_builds": 0, "retention": retention, "retention_without_lists": retention - 0.4,
            "used_later": {"strings": 100, "pooled": used, "mean_over_calls": used + 0.05,
                           "before_source_compaction": {"pooled": used}, "after_source_compaction": {"pooled": used - 0.1},
                           "by_kind": {"identifier": {"strings": 80, "pooled": used}},
                           "missing": {"strings": int(100 * (1 - used)), "behind_handle": 3, "gone": 7, "build_failed": 0}},
            "cost_real": None, "summarization_cost": 0, "cache_written": 10,
            "requirement_retention": req, "requirement_retention_by_origin": {"user": req, "tool": req / 2},
            "decision_retention": dec, "cost_uncached": tokens, "cost_cached": cost, "cost_cached_last_message": cost // 2,
            "cache_read_share": 0.5, "build_ms_p50": 1.0, "build_ms_p95": 2.0, "spills": 0, "prunes": 0,
            "compactions": 0, "extra_calls": 0}


def _result(window: int = 200_000) -> dict[str, Any]:
    return {"source": "claude-code", "window": window, "runs": 1, "calls": 10,
            "fit": {"a": 25930.66, "b": 1.21848, "median_rel_err": 0.007}, "prefix": {"tokens": 21284, "how": "fit"},
            "calibration_ratio": 1.21, "cache_rules": {"name": "anthropic", "read": 0.1, "write": 1.25,
                                                       "min_tokens": 1024, "ttl_s": 300.0},
            "strategies": {"ctxagent": _strategy(1000, 0.997, 0.33, 0.75, 600, used=0.9),
                           "grep": _strategy(500, 0.5, 0.64, 0.5, 300, used=0.5),
                           "last2+names": _strategy(400, 0.98, 0.02, 0.01, 100, used=0.55),
                           "reference": {**_strategy(1500, 0.997, 0.65, 0.61, 200, used=0.99), "cost_real": 210}},
            "after_source_compaction": {"calls": 4, "facts": 3, "early_facts": 1,
                                        "retention": {"ctxagent": 1.0, "last2+names": 0.9, "reference": 0.99},
                                        "early_retention": {}, "requirement_retention": {"ctxagent": 0.1},
                                        "decision_retention": {}}}


def test_baseline_note_names_what_the_baseline_meets() -> None:
    note = baseline_note(_result())
    assert "also meets retention 0.980 (ctxagent 0.997, reference 0.997)" in note  # within 0.02
    assert "requirement_retention" not in note and "decision_retention" not in note
    assert "cheaper on tokens 400 (ctxagent 1,000); cost_cached 100 (ctxagent 600)" in note
    # measured against the better of ctxagent and the reference: a failing engine does not make the baseline look good
    failed = _result()
    failed["strategies"]["ctxagent"] = {**_strategy(10, 0.0, 0.0, 0.0, 10), "overflows": 9}
    note = baseline_note(failed)
    assert "meets retention 0.980" in note and "requirement_retention" not in note
    assert "ctxagent overflowed on 9 calls" in note


def test_rows_start_with_the_reference_and_label_the_baselines() -> None:
    rows = main_rows(_result())
    assert [r[0] for r in rows] == ["reference", "ctxagent", "grep (baseline)", "last2+names (baseline)"]
    ctx = rows[1]
    # the headline: used-later retention, pooled and per call; tokens and cached cost against the reference; overflows
    assert ctx[1] == 0.9 and ctx[2] == pytest.approx(0.95) and ctx[4] == "-33%" and ctx[6] == "+200%" and ctx[7] == 0
    note = baseline_note(_result(), "grep")
    assert note.startswith("The trivial baseline grep also meets requirement_retention 0.640")
    assert "used-later" not in note  # 0.5 against 0.9: the measure tells it apart


def test_text_and_markdown_and_sweep() -> None:
    md = replay_text(_result(), md=True)
    assert md.index("| strategy | used-later kept | per call | tokens_sum | vs ref | cost_cached | vs ref | overflows |") \
        < md.index("retention w/o lists")  # the headline table first, the details after
    assert "After the source's own compaction (4 calls" in md
    assert "+21,284 local tokens of stable prefix" in md and "cache rules anthropic" in md
    assert "its real bill from the reported usage is 210" in md
    assert "ctxagent's requests lack 9 of the 100 strings" in md and "3 behind a handle" in md
    sweep = sweep_text([_result(), _result(48_000)], md=True)
    assert "| 48,000 | – | last2+names | 0.55 |" in sweep and "| 200,000 | – | ctxagent | 0.9 |" in sweep


def test_bench_all_prints_the_new_tables_for_every_source(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`ctxagent bench all` on a tiny data root with one hand-made run per source (perf and LoCoMo skipped)."""
    import gzip
    import json
    import subprocess
    import sys

    root = tmp_path / "bench"
    for name in ("claude-code", "mini-swe-agent", "swe-agent", "openhands"):
        (root / name).mkdir(parents=True)
    task = "Fix src/app.py. Do not touch the tests."
    cc = [{"type": "user", "message": {"role": "user", "content": task}},
          {"type": "assistant", "timestamp": "2026-02-10T21:11:59Z", "message": {
              "id": "m1", "model": "claude", "content": [{"type": "tool_use", "id": "t1", "name": "Read",
                                                         "input": {"file_path": "src/app.py"}}],
              "usage": {"input_tokens": 10, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 2000}}},
          {"type": "user", "message": {"role": "user", "content": [
              {"type": "tool_result", "tool_use_id": "t1", "content": "import os"}]}},
          {"type": "assistant", "timestamp": "2026-02-10T21:12:09Z", "message": {
              "id": "m2", "model": "claude", "content": [{"type": "text", "text": "Done."}],
              "usage": {"input_tokens": 30, "cache_read_input_tokens": 2000, "cache_creation_input_tokens": 50}}}]
    (root / "claude-code" / "s.jsonl").write_text("\n".join(json.dumps(r) for r in cc) + "\n")
    mini = {"instance_id": "x", "messages": [
        {"role": "system", "content": "sys"}, {"role": "user", "content": task},
        {"role": "assistant", "content": "THOUGHT\n```bash\ncat src/app.py\n```", "usage": {"prompt_tokens": 120}},
        {"role": "user", "content": "<returncode>0</returncode><output>import os</output>"},
        {"role": "assistant", "content": "THOUGHT\n```bash\necho done\n```", "usage": {"prompt_tokens": 160}}]}
    with gzip.open(root / "mini-swe-agent" / "trajectories.jsonl.gz", "wt") as fh:
        fh.write(json.dumps(mini) + "\n")
    swe = {"history": [{"role": "system", "content": "sys"}, {"role": "user", "content": task},
                       {"role": "assistant", "content": "look", "action": "cat src/app.py", "thought": "look"},
                       {"role": "user", "content": "import os", "message_type": "observation"},
                       {"role": "assistant", "content": "done", "action": "submit", "thought": "done"}]}
    (root / "swe-agent" / "a.traj").write_text(json.dumps(swe))
    resp = {"id": "r1", "usage": {"prompt_tokens": 50}, "choices": [{"message": {"content": "", "tool_calls": [
        {"id": "a", "function": {"name": "execute_bash", "arguments": "{\"command\": \"cat src/app.py\"}"}}]}}]}
    oh = {"instance_id": "o", "history": [
        {"source": "agent", "action": "system", "args": {"content": "sys"}},
        {"source": "user", "action": "message", "args": {"content": task}},
        {"source": "agent", "action": "run", "args": {"command": "cat src/app.py"},
         "tool_call_metadata": {"tool_call_id": "a", "function_name": "execute_bash", "model_response": resp}},
        {"source": "agent", "observation": "run", "content": "import os",
         "tool_call_metadata": {"tool_call_id": "a", "function_name": "execute_bash", "model_response": resp}}],
        "metrics": {"token_usages": [{"prompt_tokens": 50, "response_id": "r1"}]}}
    (root / "openhands" / "o.jsonl").write_text(json.dumps(oh) + "\n")
    out = subprocess.run([sys.executable, "-m", "ctxagent.tui.cli", "bench", "all", "--data", str(root), "--skip-perf",
                          "--skip-locomo", "--out", str(tmp_path / "all.json")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    for source in ("claude-code", "mini-swe-agent", "swe-agent", "openhands"):
        assert f"{source} — W = " in out.stdout
    assert out.stdout.count("| last2+names (baseline) |") == 4 and out.stdout.count("| grep (baseline) |") == 4
    assert out.stdout.count("The trivial baseline last2+names") == 4
    assert "claude-code at smaller windows" in out.stdout and "| 32,000 | product | ctxagent |" in out.stdout
    saved = json.loads((tmp_path / "all.json").read_text())
    assert [(r["window"], r["prefix"]["mode"]) for r in saved["sweep"]] == [
        (48_000, "auto"), (32_000, "auto"), (48_000, "product"), (32_000, "product")]
    assert saved["replay"][0]["strategies"]["reference"]["cost_real"] == round(10 + 1.25 * 2000 + 30 + 0.1 * 2000 + 1.25 * 50)
