"""`ctxagent bench subagents`: the parent's window with a sub-agent against reading inline.

A generated repository (2,000 files and a ~300k-token log with one failing line) and the scripted
model run one task two ways: inline (the parent lists, reads and greps) and delegated (a `task`
sub-agent does the same steps and hands back its answer). For each: the parent's tokens per step,
its peak, the total across parent and child, and whether the failing line reached the parent.
Everything is measured from the session logs the real loop writes (scripted usage is deterministic:
the request body's JSON length / 4).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ctxagent.context.floor.display import echo, echo_json

FAILING = "FAILED tests/test_ledger.py::test_rounding - AssertionError: 0.30000000000000004 != 0.3 (ledger.py:412)"
LOG_TOKENS = 300_000
FILES = 2_000
TASK = "find the failing line"

STEPS = [
    {"text": "Listing the tree.", "tool_calls": [{"name": "list_files", "arguments": {}}]},
    {"text": "Reading the log.", "tool_calls": [{"name": "read_file", "arguments": {"path": "logs/ci.log"}}]},
    {"text": "Searching it.", "tool_calls": [{"name": "grep", "arguments": {"pattern": "^FAILED", "path": "logs"}}]},
]


def make_repo(root: Path) -> None:
    for i in range(FILES):
        d = root / "src" / f"pkg{i // 100:02d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i:04d}.py").write_text(f"def f{i}(x):\n    return x + {i}\n", encoding="utf-8")
    (root / "logs").mkdir()
    line = "INFO 2026-01-01T00:00:00 worker-3 processed batch {n} in 12ms status=ok checksum=deadbeef\n"
    lines = [line.format(n=n) for n in range(LOG_TOKENS * 4 // len(line))]
    lines.insert(len(lines) * 2 // 3, FAILING + "\n")
    (root / "logs" / "ci.log").write_text("".join(lines), encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


def scripts() -> dict[str, Any]:
    answer = {"text": f"The failing line: {FAILING}"}
    inline = [*STEPS, answer]
    delegated = {"turns": [{"text": "Delegating.", "tool_calls": [{"name": "task", "arguments": {
        "description": TASK, "prompt": "Find the one failing test line in logs/ci.log; quote it exactly."}}]},
        {"text": "The sub-agent found it."}], "agents": {TASK: [*STEPS, answer]}}
    return {"inline": inline, "delegated": delegated}


def _measure(log: Any) -> dict[str, Any]:
    steps = [int(e.context_report.report.get("total", 0)) for e in log.of_kind("context_report")]
    usage = [e.assistant.usage for e in log.of_kind("assistant")]
    return {"steps": steps, "peak": max(steps, default=0),
            "tokens": sum(u.prompt_tokens + u.output_tokens for u in usage)}


def run_case(repo: Path, name: str, script: Any, window: int) -> dict[str, Any]:
    from ctxagent.agent.config import Config
    from ctxagent.agent.factory import create_agent
    from ctxagent.agent.session import open_session
    from ctxagent.agent.subagents.report import open_child_log

    path = repo.parent / f"{name}.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    session = open_session(repo, Config(model=f"scripted:{path}", memory=False, window=window))
    agent = create_agent(session)
    done = agent.run_turn("Which test failed in CI? The log is logs/ci.log.")
    parent = _measure(agent.log)
    children = [(ev.tool_result.meta.model_extra or {}).get("subagent") for ev in agent.log.of_kind("tool_result")]
    child = [_measure(open_child_log(agent.log, c["session"])) for c in children if isinstance(c, dict)]
    reached = any(FAILING in e.tool_result.content for e in agent.log.of_kind("tool_result"))
    return {"case": name, "stop": done.stop_reason, "parent_steps": parent["steps"], "parent_peak": parent["peak"],
            "parent_tokens": parent["tokens"], "child_tokens": sum(c["tokens"] for c in child),
            "child_peak": max((c["peak"] for c in child), default=0),
            "total_tokens": parent["tokens"] + sum(c["tokens"] for c in child), "answer_reached_parent": reached}


def run(window: int = 200_000) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="ctxagent-bench-subagents-") as tmp:
        rows = []
        for name, script in scripts().items():
            repo = Path(tmp) / name / "repo"
            repo.mkdir(parents=True)
            make_repo(repo)
            rows.append(run_case(repo, name, script, window))
        return rows


def table(rows: list[dict[str, Any]]) -> str:
    out = ["| case | parent tokens per step | parent peak | child peak | total tokens (parent + child) | answer reached the parent |",
           "| --- | --- | ---: | ---: | ---: | --- |"]
    for r in rows:
        steps = ", ".join(f"{t:,}" for t in r["parent_steps"])
        out.append(f"| {r['case']} | {steps} | {r['parent_peak']:,} | {r['child_peak']:,} | "
                   f"{r['total_tokens']:,} ({r['parent_tokens']:,} + {r['child_tokens']:,}) | "
                   f"{'yes' if r['answer_reached_parent'] else 'no'} |")
    return "\n".join(out)


def cmd(args: argparse.Namespace) -> int:
    rows = run(args.window)
    data = Path(args.data or os.environ.get("CTXAGENT_BENCH_DATA") or "../shared/bench") / "claude-code"
    real = real_rows(data) if data.is_dir() else []
    if args.json:
        echo_json({"scripted": rows, "claude_code_subagents": real}, indent=1)
        return 0
    echo(table(rows))
    echo()
    echo(real_table(real) if real else f"(no Claude Code sub-agent traffic under {data})")
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("subagents", help="the parent's window with a task sub-agent vs reading inline (scripted)")
    p.add_argument("--window", type=int, default=200_000, help="the window of parent and child in tokens (default 200000)")
    p.add_argument("--json", action="store_true", help="print JSON instead of the tables")
    p.add_argument("--data", help="bench data root (default $CTXAGENT_BENCH_DATA or ../shared/bench)")
    p.set_defaults(func=cmd)


# -- real sub-agent traffic: Claude Code's subagents/agent-*.jsonl ------------------------------------
def _calls(path: Path) -> tuple[list[tuple[int, int]], int, int]:
    """(prompt, output) tokens per model call (deduplicated by message id), the tokens of the tool
    output it read (characters / 4) and of its final answer."""
    calls: dict[str, tuple[int, int]] = {}
    read_chars, answer = 0, ""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        msg = rec.get("message") if isinstance(rec, dict) else None
        if not isinstance(msg, dict):
            continue
        content = msg.get("content")
        if msg.get("role") == "assistant" and isinstance(msg.get("usage"), dict):
            u = msg["usage"]
            prompt = sum(int(u.get(k) or 0) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
            calls[str(msg.get("id") or len(calls))] = (prompt, int(u.get("output_tokens") or 0))
            texts = [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
            if texts:
                answer = "\n".join(texts)
        elif msg.get("role") == "user" and isinstance(content, list):
            for b in content:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    inner = b.get("content")
                    read_chars += len(inner if isinstance(inner, str) else json.dumps(inner, ensure_ascii=False))
    return list(calls.values()), read_chars // 4, len(answer) // 4


def real_rows(data: Path, runs: set[str] | None = None) -> list[dict[str, Any]]:
    """One row per delegated sub-agent transcript under `data` (Claude Code's folder); `runs`: only those
    of these sessions (the runs a replay read)."""
    rows = []
    for path in sorted(data.glob("*/subagents/agent-*.jsonl")):
        if path.name.startswith("agent-acompact"):
            continue  # Claude Code's own compaction call, not a delegated task
        if runs is not None and path.parent.parent.name not in runs:
            continue
        calls, read, answer = _calls(path)
        parent_file = data / f"{path.parent.parent.name}.jsonl"
        parent_calls = _calls(parent_file)[0] if parent_file.is_file() else []
        parent_peak = max((p for p, _ in parent_calls), default=0)
        rows.append({"session": path.parent.parent.name[:8], "agent": path.stem, "calls": len(calls),
                     "prompt_per_call": [p for p, _ in calls], "peak": max((p for p, _ in calls), default=0),
                     "total_tokens": sum(p + o for p, o in calls), "tool_output_read": read, "answer_tokens": answer,
                     "parent_peak": parent_peak, "saved_in_parent_window": max(0, read - answer)})
    return rows


def replay_section(data: Path, runs: set[str]) -> dict[str, Any] | None:
    """`bench replay`'s sub-agent rows: the real sub-agents of the runs replayed, their calls accounted
    apart from the parent's (the replay's strategies measure the parent's calls only), with a total;
    None when those runs delegated nothing. Cheap: it reads the transcripts' usage, builds nothing."""
    folder = data if data.is_dir() else data.parent
    rows = real_rows(folder, runs)
    if not rows:
        return None
    total = {k: sum(r[k] for r in rows) for k in ("calls", "total_tokens", "tool_output_read", "answer_tokens",
                                                  "saved_in_parent_window")}
    return {"rows": rows, "total": {**total, "sub_agents": len(rows), "peak": max(r["peak"] for r in rows)}}


def replay_section_text(section: dict[str, Any]) -> str:
    t = section["total"]
    return (f"Sub-agent traffic (Claude Code's subagents/agent-*.jsonl: {t['sub_agents']} sub-agent(s), {t['calls']} calls, "
            f"{t['total_tokens']:,} tokens, not in the rows above): the parent read {t['answer_tokens']:,} tokens of "
            f"answers instead of {t['tool_output_read']:,} of tool output, {t['saved_in_parent_window']:,} tokens of "
            "its window saved against reading inline.\n" + real_table(section["rows"]))


def real_table(rows: list[dict[str, Any]]) -> str:
    out = ["| run | sub-agent | calls | its peak | its total tokens | tool output it read | answer to the parent | "
           "parent's peak | parent window saved vs inline |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        share = f" ({100 * r['saved_in_parent_window'] / r['parent_peak']:.0f}% of its peak)" if r["parent_peak"] else ""
        out.append(f"| {r['session']} | {r['agent']} | {r['calls']} | {r['peak']:,} | {r['total_tokens']:,} | "
                   f"{r['tool_output_read']:,} | {r['answer_tokens']:,} | {r['parent_peak']:,} | "
                   f"{r['saved_in_parent_window']:,}{share} |")
    return "\n".join(out)
