"""OpenHands runs (one JSON run a line: `instance_id`, `history`, `metrics`) into `Trajectory` objects.

History events carry `source` and either `action` + `args` or `observation` + `content`. An agent
action with `tool_call_metadata` is a tool call of one model response (`model_response.id`; several
actions of one response are merged into one assistant event, its usage counted once); the
observation with the same `tool_call_id` is its result. The `system` action is the system prompt,
user `message` actions are user turns. `recall` actions and observations (workspace context
lookups) are skipped and counted; observations without a tool call (e.g. a rejected call's error)
are shown to the model as user messages. Model calls that left no event (the response was rejected
before it became an action) are counted as `openhands:call_without_event`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ctxagent.tui.lab.bench.readers import Trajectory, block_text


def iter_openhands(path: Path) -> Iterator[Trajectory | str]:
    files = [path] if path.is_file() else sorted(path.glob("*.jsonl"))
    for f in files:
        try:
            lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            yield "openhands:unreadable_file"
            continue
        for n, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                run = json.loads(line)
            except ValueError:
                yield "openhands:bad_json_line"
                continue
            if not isinstance(run, dict) or not isinstance(run.get("history"), list):
                yield "openhands:no_history"
                continue
            traj = parse_openhands(run, run_id=str(run.get("instance_id") or f"{f.name}:{n}"))
            if traj.calls:
                yield traj
            else:
                yield "openhands:no_model_calls"


def _tool_arguments(response: dict[str, Any], call_id: str, fallback: dict[str, Any]) -> dict[str, Any]:
    for choice in response.get("choices") or []:
        for tc in ((choice or {}).get("message") or {}).get("tool_calls") or []:
            if str(tc.get("id")) == call_id:
                raw = (tc.get("function") or {}).get("arguments")
                try:
                    val = json.loads(raw) if isinstance(raw, str) else raw
                except ValueError:
                    return {"input": raw}
                if isinstance(val, dict):
                    return val
    return {k: v for k, v in fallback.items() if k in ("command", "path", "file_text", "old_str", "new_str", "code")}


def _response_text(response: dict[str, Any]) -> str:
    for choice in response.get("choices") or []:
        content = ((choice or {}).get("message") or {}).get("content")
        if isinstance(content, str):
            return content
    return ""


def parse_openhands(run: dict[str, Any], run_id: str = "run") -> Trajectory:
    traj = Trajectory("openhands", run_id)
    sk = traj.skipped
    current_response: str | None = None
    current: dict[str, Any] | None = None
    response_of_call: dict[int, str] = {}  # call index → model response id (for the cache usage below)
    for ev in run.get("history") or []:
        if not isinstance(ev, dict):
            sk["openhands:bad_event"] += 1
            continue
        action, observation = ev.get("action"), ev.get("observation")
        args = found if isinstance(found := ev.get("args"), dict) else {}
        meta = ev.get("tool_call_metadata") if isinstance(ev.get("tool_call_metadata"), dict) else None
        if action == "recall" or observation == "recall":
            sk["openhands:recall"] += 1
            continue
        if action == "system":
            traj.system = str(args.get("content") or ev.get("message") or "")
            continue
        if action is not None:
            if ev.get("source") == "user":
                if action == "message":
                    traj.add_user(str(args.get("content") or ev.get("message") or ""))
                else:
                    sk[f"openhands:user_action:{action}"] += 1
                continue
            if meta is None:
                if action == "message":  # the agent speaking without a tool call
                    text = str(args.get("content") or ev.get("message") or "")
                    traj.add_assistant(text, [], None)
                    current, current_response = None, None
                else:
                    sk[f"openhands:action_without_call:{action}"] += 1
                continue
            response = found if isinstance(found := meta.get("model_response"), dict) else {}
            rid = str(response.get("id") or "")
            call = {"id": str(meta.get("tool_call_id") or f"call_{len(traj.calls) + 1}"),
                    "name": str(meta.get("function_name") or action),
                    "arguments": _tool_arguments(response, str(meta.get("tool_call_id")), args)}
            if current is not None and rid and rid == current_response:
                current["tool_calls"].append(call)
                sk["openhands:response_with_several_calls"] += 1
                continue
            usage = found if isinstance(found := response.get("usage"), dict) else {}
            reported = usage.get("prompt_tokens")
            text = _response_text(response) or str(args.get("thought") or "")
            current = traj.add_assistant(text, [call], int(reported) if reported is not None else None)
            current_response = rid or None
            if rid:
                response_of_call[len(traj.calls) - 1] = rid
            continue
        if observation is not None:
            content = block_text(ev.get("content"), sk, "openhands")
            if meta is not None:
                traj.add_tool_result(str(meta.get("tool_call_id") or ""), str(meta.get("function_name") or observation),
                                     content, is_error=observation == "error")
            else:
                traj.add_user(content)
                sk["openhands:observation_without_call"] += 1
            continue
        sk["openhands:unknown_event"] += 1
    usages = ((run.get("metrics") or {}).get("token_usages")) if isinstance(run.get("metrics"), dict) else None
    if isinstance(usages, list) and len(usages) > len(traj.calls):
        sk["openhands:call_without_event"] += len(usages) - len(traj.calls)
    _cache_usage(traj, usages, response_of_call)
    return traj


def _cache_usage(traj: Trajectory, usages: Any, response_of_call: dict[int, str]) -> None:
    """Cache reads / writes per call from `metrics.token_usages` (matched by response id)."""
    if not isinstance(usages, list):
        return
    by_id = {str(u.get("response_id")): u for u in usages if isinstance(u, dict) and u.get("response_id")}
    for index, rid in response_of_call.items():
        u = by_id.get(rid)
        call = traj.calls[index]
        if u is None or call.reported is None:
            continue
        call.cached = int(u.get("cache_read_tokens") or 0)
        call.cache_write = int(u.get("cache_write_tokens") or 0)
