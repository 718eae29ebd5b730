"""`bench replay` accounts a Claude Code run's real sub-agents in a row of their own (their calls are
not the parent's), with the measures `bench subagents` gives them; cheap: read from the usage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

RUN = "0f0e0d0c-0000-4000-8000-000000000001"


def _record(kind: str, n: int, message: dict, **extra: object) -> str:
    return json.dumps({"type": kind, "uuid": f"u{n}", "sessionId": RUN, "timestamp": f"2026-01-01T00:00:{n:02d}.000Z",
                       "isSidechain": kind == "side", "message": message, **extra})


def _assistant(n: int, prompt: int, text: str, tool: dict | None = None, side: bool = False) -> str:
    content: list[dict] = [{"type": "text", "text": text}] + ([tool] if tool else [])
    rec = json.loads(_record("assistant", n, {"id": f"m{n}", "role": "assistant", "model": "claude-sonnet-4-5",
                                              "content": content, "usage": {"input_tokens": prompt, "output_tokens": 20}}))
    rec["isSidechain"] = side
    return json.dumps(rec)


def _result(n: int, tool_id: str, text: str, side: bool = False) -> str:
    rec = json.loads(_record("user", n, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": text}]}))
    rec["isSidechain"] = side
    return json.dumps(rec)


def make_data(root: Path) -> Path:
    data = root / "claude-code"
    (data / RUN / "subagents").mkdir(parents=True)
    task = {"type": "tool_use", "id": "t1", "name": "Task", "input": {"description": "find it", "prompt": "find the failing line"}}
    (data / f"{RUN}.jsonl").write_text("\n".join([
        _record("user", 1, {"role": "user", "content": "Which line fails?"}),
        _assistant(2, 3000, "delegating", task),
        _result(3, "t1", "line 42 of ci.log fails"),
        _assistant(4, 3100, "line 42 fails"),
    ]) + "\n", encoding="utf-8")
    grep = {"type": "tool_use", "id": "g1", "name": "Grep", "input": {"pattern": "FAIL"}}
    (data / RUN / "subagents" / "agent-a1.jsonl").write_text("\n".join([
        _record("user", 1, {"role": "user", "content": "find the failing line"}),
        _assistant(2, 2000, "grepping", grep, side=True),
        _result(3, "g1", "FAIL ci.log:42 " + "x" * 8000, side=True),
        _assistant(4, 4100, "line 42 of ci.log fails", side=True),
    ]) + "\n", encoding="utf-8")
    return root


def test_bench_replay_gives_the_runs_sub_agents_their_own_row(tmp_path: Path) -> None:
    data = make_data(tmp_path)
    cmd = [str(Path(sys.executable).with_name("ctxagent")), "bench", "replay", "--source", "claude-code", "--data", str(data),
           "--strategy", "ctxagent", "--jobs", "1", "--no-memory"]
    out = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    (result,) = json.loads(out.stdout) if out.stdout.lstrip().startswith("[") else [json.loads(out.stdout)]
    section = result["subagents"]
    (row,) = section["rows"]
    assert row["agent"] == "agent-a1" and row["calls"] == 2 and row["peak"] == 4100
    assert row["total_tokens"] == 2000 + 20 + 4100 + 20 and row["parent_peak"] == 3100
    assert row["saved_in_parent_window"] == row["tool_output_read"] - row["answer_tokens"] > 1900
    assert section["total"]["calls"] == 2 and result["calls"] == 2  # the parent's two calls, replayed; the child's apart
    text = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert text.returncode == 0, text.stderr
    assert "Sub-agent traffic" in text.stdout and "| agent-a1 | 2 | 4,100 |" in text.stdout
