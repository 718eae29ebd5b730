"""mini-swe-agent (`trajectories.jsonl.gz`) and SWE-agent (`*.traj`) runs into `Trajectory` objects.

mini-swe-agent: `messages[0]` is the system prompt, `messages[1]` the task; each assistant message
holds a THOUGHT and exactly one ```bash block (the action) and carries `usage.prompt_tokens`; the
next user message is that command's output. The bash block becomes a `bash` tool call and the
output its tool result; an assistant message with zero or several blocks was rejected by the
agent, so it has no tool call and the following user message (the format error) stays a user
message. Both cases are counted.

SWE-agent: `history` holds system / user / assistant / tool messages; observations are `user` or
`tool` messages (newer files tag them `message_type: observation`). An assistant message's action
is either its `tool_calls` (function calling) or its `action` string (a `bash` call here). The
files carry no per-call token usage, so their calls have no reported tokens.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ctxagent.tui.lab.bench.readers import Trajectory, block_text

BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")


# -- mini-swe-agent ------------------------------------------------------------------------------
def iter_mini_swe_agent(path: Path) -> Iterator[Trajectory | str]:
    files = [path] if path.is_file() else sorted(path.glob("*.jsonl.gz")) + sorted(path.glob("*.jsonl"))
    for f in files:
        opener = gzip.open if f.suffix == ".gz" else open
        try:
            with opener(f, "rt", encoding="utf-8") as fh:
                for n, line in enumerate(fh):
                    if not line.strip():
                        continue
                    try:
                        run = json.loads(line)
                    except ValueError:
                        yield "mini-swe-agent:bad_json_line"
                        continue
                    if not isinstance(run, dict) or not isinstance(run.get("messages"), list):
                        yield "mini-swe-agent:no_messages"
                        continue
                    traj = parse_mini_swe_agent(run, run_id=str(run.get("instance_id") or f"{f.name}:{n}"))
                    if traj.calls:
                        yield traj
                    else:
                        yield "mini-swe-agent:no_model_calls"
        except (OSError, EOFError):
            yield "mini-swe-agent:unreadable_file"


def parse_mini_swe_agent(run: dict[str, Any], run_id: str = "run") -> Trajectory:
    traj = Trajectory("mini-swe-agent", run_id)
    sk = traj.skipped
    pending: str | None = None  # id of the bash call awaiting its output
    for i, m in enumerate(run.get("messages") or []):
        if not isinstance(m, dict):
            sk["mini-swe-agent:bad_message"] += 1
            continue
        role = m.get("role")
        text = block_text(m.get("content"), sk, "mini-swe-agent")
        if role == "system" and i == 0:
            traj.system = text
        elif role == "assistant":
            usage = found if isinstance(found := m.get("usage"), dict) else {}
            reported = usage.get("prompt_tokens")
            if reported is None:
                sk["mini-swe-agent:call_without_usage"] += 1
            cached = usage.get("cached_tokens")
            blocks = BASH_BLOCK.findall(text)
            calls: list[dict[str, Any]] = []
            shown = text
            if len(blocks) == 1:
                call_id = f"call_{len(traj.calls) + 1}"
                calls.append({"id": call_id, "name": "bash", "arguments": {"command": blocks[0]}})
                shown = BASH_BLOCK.sub("", text).strip()
                pending = call_id
            else:
                sk["mini-swe-agent:no_bash_block" if not blocks else "mini-swe-agent:several_bash_blocks"] += 1
                pending = None
            traj.add_assistant(shown, calls, int(reported) if reported is not None else None,
                               int(cached) if cached is not None else None)
        elif role == "user" and pending is not None:
            rc = RETURNCODE.search(text)
            traj.add_tool_result(pending, "bash", text, is_error=bool(rc and rc.group(1) != "0"))
            pending = None
        elif role in ("user", "system"):
            traj.add_user(text)
        else:
            sk[f"mini-swe-agent:role:{role}"] += 1
    return traj


# -- SWE-agent -----------------------------------------------------------------------------------
def iter_swe_agent(path: Path) -> Iterator[Trajectory | str]:
    files = [path] if path.is_file() else sorted(path.rglob("*.traj"))
    for f in files:
        try:
            obj = json.loads(f.read_text(encoding="utf-8", errors="replace"))
        except (OSError, ValueError):
            yield "swe-agent:unreadable_file"
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("history"), list):
            yield "swe-agent:no_history"
            continue
        rel = f.relative_to(path) if path.is_dir() else Path(f.name)
        traj = parse_swe_agent(obj, run_id=str(rel.parent / rel.stem))
        if traj.calls:
            yield traj
        else:
            yield "swe-agent:no_model_calls"


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            val = json.loads(raw)
        except ValueError:
            return {"input": raw}
        return val if isinstance(val, dict) else {"input": val}
    return {}


def parse_swe_agent(obj: dict[str, Any], run_id: str = "run") -> Trajectory:
    traj = Trajectory("swe-agent", run_id)
    sk = traj.skipped
    pending: list[str] = []  # call ids awaiting an observation, oldest first
    pending_name: dict[str, str] = {}
    for m in obj.get("history") or []:
        if not isinstance(m, dict):
            sk["swe-agent:bad_message"] += 1
            continue
        role = m.get("role")
        text = block_text(m.get("content"), sk, "swe-agent")
        if role == "system":
            if not traj.system:
                traj.system = text
            else:
                traj.add_user(text)
        elif role == "assistant":
            calls: list[dict[str, Any]] = []
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                cid = str(tc.get("id") or f"call_{len(traj.calls) + 1}_{len(calls)}")
                calls.append({"id": cid, "name": str(fn.get("name") or "tool"), "arguments": _arguments(fn.get("arguments"))})
            shown = text
            if not calls and str(m.get("action") or "").strip():
                calls.append({"id": f"call_{len(traj.calls) + 1}", "name": "bash",
                              "arguments": {"command": str(m["action"]).strip()}})
                if m.get("thought") is not None:  # the content is thought + the action block
                    shown = str(m.get("thought") or "")
            traj.add_assistant(shown, calls, None)
            pending = [c["id"] for c in calls]
            pending_name = {c["id"]: c["name"] for c in calls}
        elif role in ("user", "tool"):
            ids = [str(x) for x in (m.get("tool_call_ids") or [])]
            call_id = ids[0] if ids and ids[0] in pending_name else (pending[0] if pending else None)
            if call_id is not None and (role == "tool" or m.get("message_type") == "observation" or not ids):
                traj.add_tool_result(call_id, pending_name.get(call_id, "bash"), text)
                pending = [c for c in pending if c != call_id]
            else:
                if role == "tool":
                    sk["swe-agent:orphan_observation"] += 1
                traj.add_user(text)
        else:
            sk[f"swe-agent:role:{role}"] += 1
    return traj
