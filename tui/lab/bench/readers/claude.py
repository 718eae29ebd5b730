"""Claude Code transcripts (`*.jsonl`, one record a line) into a `Trajectory`.

Quirks handled (see ../shared/bench/README.md):
- only `user`, `assistant` and `system` records matter; `progress`, `file-history-snapshot`,
  `queue-operation` are skipped and counted;
- one API response is split over several assistant records sharing `message.id`: they are merged
  into one assistant event and its usage is counted once;
- the real prompt size of a call = input + cache_read + cache_creation tokens (the last two are kept:
  the reference's real bill uses them, with `cache_creation.ephemeral_1h_input_tokens`, the writes
  made with the 1-hour TTL), its record's timestamp is the call's time and `message.model` its model;
- a `system` record with subtype `compact_boundary` followed by a `user` record with
  `isCompactSummary` is the real compaction: it becomes a `source_compaction` event carrying the
  summary the model continued from;
- `thinking` blocks are not replayed (the API does not resend earlier turns' thinking), sidechain
  records (an inline subagent) are skipped, `<synthetic>` messages (no API call) are skipped.
The `subagents/` folders are separate conversations and are not replayed as part of the session; the
usage of a compaction call there (`agent-acompact-*.jsonl`) is attached to its compaction, to bill it.
A subagent's own transcript, where every record is a sidechain record, reads with `sidechain=True`.

Transcripts come from whatever Claude Code version wrote them, and may be still being written: a
record whose fields have shapes this reader does not know is skipped and counted, never fatal, and
`read_transcript` takes a snapshot of a file up to its last complete line (a torn last line, the one
being written, is counted apart).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from ctxagent.context.floor import bounded_json
from ctxagent.tui.lab.bench.readers import SourceEvent, Trajectory, block_text

TORN = "claude-code:torn_last_line"  # a last line without its newline: the transcript is still being written


def read_transcript(path: Path) -> tuple[list[str], bool]:
    """The complete lines of a transcript as it is now, and whether its last line was torn (being written).

    Reads the size the file had when opened, so a file that grows meanwhile gives one consistent snapshot."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        data = fh.read(size)
    torn = bool(data) and not data.endswith(b"\n")
    if torn:
        head, _, last = data.rpartition(b"\n")
        try:  # a last line that parses was complete, only its newline missing (an editor, a copy)
            bounded_json.loads(last, bounded_json.LOG_DEPTH)
            torn = False
        except ValueError:
            data = head
    return data.decode("utf-8", errors="replace").splitlines(), torn


def iter_claude_code(path: Path) -> Iterator[Trajectory | str]:
    files = [path] if path.is_file() else sorted(p for p in path.glob("*.jsonl") if p.is_file())
    for f in files:
        try:
            lines, torn = read_transcript(f)
        except OSError:
            yield "claude-code:unreadable_file"
            continue
        traj = parse_claude_code(lines, run_id=f.stem)
        if torn:
            traj.skipped[TORN] += 1
        if not traj.calls:
            yield "claude-code:no_model_calls"
            continue
        attach_compaction_usage(traj, f.parent / f.stem / "subagents")
        yield traj


def compaction_usage(lines: list[str]) -> dict[str, Any] | None:
    """The usage of a compaction call (a `subagents/agent-acompact-*.jsonl` transcript): its prompt tokens, of which
    read from / written to the cache (and with the 1-hour TTL), its model and time. Its `output_tokens` is not
    used: the transcript records the first streamed chunk's count, not the summary's."""
    for raw in lines:
        try:
            rec = bounded_json.loads(raw, bounded_json.LOG_DEPTH)  # a line too deep is skipped like bad JSON
        except ValueError:
            continue
        msg = rec.get("message") if isinstance(rec, dict) and rec.get("type") == "assistant" else None
        usage = (msg or {}).get("usage") if isinstance(msg, dict) else None
        if not isinstance(usage, dict):
            continue
        cached = _int(usage.get("cache_read_input_tokens"))
        written = _int(usage.get("cache_creation_input_tokens"))
        by_ttl = found if isinstance(found := usage.get("cache_creation"), dict) else {}
        return {"reported": _int(usage.get("input_tokens")) + cached + written, "cached": cached, "written": written,
                "written_1h": _int(by_ttl.get("ephemeral_1h_input_tokens")), "model": msg.get("model") if isinstance(msg, dict) else None,
                "time": _epoch(rec.get("timestamp"))}
    return None


def attach_compaction_usage(traj: Trajectory, folder: Path) -> None:
    """Give each of the session's own compactions, in order, the usage of its compaction call when the transcript's
    `subagents/` folder has it (else the compaction is billed from the simulation alone)."""
    if not folder.is_dir():
        return
    found = []
    for f in sorted(folder.glob("agent-acompact-*.jsonl")):
        try:
            usage = compaction_usage(f.read_text(encoding="utf-8", errors="replace").splitlines())
        except OSError:
            continue
        if usage is not None:
            found.append(usage)
    found.sort(key=lambda u: u.get("time") or 0.0)
    boundaries = [e for e in traj.events if e.kind == "source_compaction"]
    for event, usage in zip(boundaries, found, strict=False):
        event.data["usage"] = usage


def parse_claude_code(lines: list[str], run_id: str = "session", sidechain: bool = False) -> Trajectory:
    """`sidechain`: keep the records marked `isSidechain` (a subagent's own transcript, where every record is)."""
    traj = Trajectory("claude-code", run_id)
    sk = traj.skipped
    by_msg_id: dict[str, dict[str, Any]] = {}
    tool_names: dict[str, str] = {}
    boundary_pre_tokens: int | None = None
    for raw in lines:
        if not raw.strip():
            continue
        try:
            rec = bounded_json.loads(raw, bounded_json.LOG_DEPTH)  # a line too deep is skipped like bad JSON
        except ValueError:
            sk["claude-code:bad_json_line"] += 1
            continue
        if not isinstance(rec, dict):
            sk["claude-code:bad_record"] += 1
            continue
        rtype = rec.get("type")
        if rtype not in ("user", "assistant", "system"):
            sk[f"claude-code:record:{rtype}"] += 1
            continue
        if rec.get("isSidechain") and not sidechain:
            sk["claude-code:sidechain"] += 1
            continue
        if rtype == "system":
            if rec.get("subtype") == "compact_boundary":
                meta = rec.get("compactMetadata")
                boundary_pre_tokens = _int(meta.get("preTokens")) if isinstance(meta, dict) else 0
                boundary_pre_tokens = boundary_pre_tokens or None
            else:
                sk[f"claude-code:system:{rec.get('subtype')}"] += 1
            continue
        msg = rec.get("message")
        if not isinstance(msg, dict):
            sk["claude-code:no_message"] += 1
            continue
        events, calls, merged = len(traj.events), len(traj.calls), len(by_msg_id)
        try:
            if rtype == "assistant":
                _assistant(traj, msg, by_msg_id, tool_names, _epoch(rec.get("timestamp")))
            else:
                _user(traj, rec, msg, tool_names, boundary_pre_tokens)
                if rec.get("isCompactSummary"):
                    boundary_pre_tokens = None
        except (TypeError, ValueError, AttributeError):
            # a record of a shape no known version writes (a newer Claude Code): dropped whole, counted
            del traj.events[events:], traj.calls[calls:]
            for key in list(by_msg_id)[merged:]:
                del by_msg_id[key]
            sk[f"claude-code:bad_{rtype}_record"] += 1
    return traj


def _int(value: Any) -> int:
    """A token count from a record: 0 when absent, or not a count (a newer version may write other shapes)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return 0
    try:
        return max(0, int(value))
    except ValueError:
        return 0


def _assistant(traj: Trajectory, msg: dict[str, Any], by_msg_id: dict[str, dict[str, Any]],
               tool_names: dict[str, str], when: float | None = None) -> None:
    sk = traj.skipped
    if msg.get("model") == "<synthetic>":
        sk["claude-code:synthetic_message"] += 1
        return
    mid = str(msg.get("id") or "")
    data = by_msg_id.get(mid) if mid else None
    if data is None:
        found = msg.get("usage")
        usage: dict[str, Any] = found if isinstance(found, dict) else {}
        reported = sum(_int(usage.get(k)) for k in
                       ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
        cached = _int(usage.get("cache_read_input_tokens"))
        written = _int(usage.get("cache_creation_input_tokens"))
        # `cache_creation` splits the writes by TTL: {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}
        by_ttl = usage.get("cache_creation") if isinstance(usage.get("cache_creation"), dict) else {}
        written_1h = _int(by_ttl.get("ephemeral_1h_input_tokens")) if by_ttl else None
        model = str(msg.get("model")) if msg.get("model") else None
        data = traj.add_assistant("", [], reported or None, cached if reported else None,
                                  written if reported else None, when, model,
                                  min(written_1h, written) if reported and written_1h is not None else None)
        if mid:
            by_msg_id[mid] = data
    else:
        sk["claude-code:split_record_merged"] += 1  # same API response: usage counted once
    content = msg.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": str(content or "")}]
    for b in blocks:
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text":
            text = str(b.get("text") or "")
            if text.strip():
                data["text"] = (data["text"] + "\n" + text).strip("\n") if data["text"] else text.strip("\n")
        elif t == "tool_use":
            call_id, name = str(b.get("id") or f"call{len(tool_names)}"), str(b.get("name") or "tool")
            call = {"id": call_id, "name": name,
                    "arguments": b.get("input") if isinstance(b.get("input"), dict) else {"input": b.get("input")}}
            tool_names[call_id] = name
            data["tool_calls"].append(call)
        elif t in ("thinking", "redacted_thinking"):
            sk["claude-code:thinking_block"] += 1
        else:
            sk[f"claude-code:assistant_block:{t}"] += 1


def _user(traj: Trajectory, rec: dict[str, Any], msg: dict[str, Any], tool_names: dict[str, str],
          pre_tokens: int | None) -> None:
    sk = traj.skipped
    content = msg.get("content")
    if rec.get("isCompactSummary"):
        traj.events.append(_compaction(block_text(content, sk, "claude-code"), pre_tokens))
        return
    if isinstance(content, str):
        traj.add_user(content)
        return
    if not isinstance(content, list):
        sk["claude-code:user_content"] += 1
        return
    texts: list[str] = []
    for b in content:
        if isinstance(b, dict) and b.get("type") == "tool_result":
            call_id = str(b.get("tool_use_id") or "")
            if call_id not in tool_names:
                sk["claude-code:orphan_tool_result"] += 1
            traj.add_tool_result(call_id, tool_names.get(call_id, "tool"),
                                 block_text(b.get("content"), sk, "claude-code"), bool(b.get("is_error")))
        else:
            texts.append(block_text([b], sk, "claude-code"))
    text = "\n".join(t for t in texts if t)
    if text.strip():
        traj.add_user(text)


def _epoch(stamp: Any) -> float | None:
    """An ISO-8601 record timestamp ("2026-02-10T21:11:59.186Z") as epoch seconds; None if absent or bad."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _compaction(summary: str, pre_tokens: int | None) -> SourceEvent:
    return SourceEvent("source_compaction", {"summary": summary, "pre_tokens": pre_tokens})
