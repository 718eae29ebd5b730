"""Rule-based memory writes from session-log events — no model call.

    user text            → pinned `constraint` per constraint sentence, `decision` per decision
                           sentence, `todo` per "TODO: …" / "- [ ] …" line; the text itself is kept
                           (store.record_user_text) to tell later what the user said
    assistant text       → `decision` per decision sentence, `todo` per TODO line
    a call that changed files (context/tool_meta.py) → `change` per file (line ranges from meta["lines"])
    run_tests            → `note`: passed / failed / no tests ran, the counts and the exit code
                           (context/test_runs.py, the rule the app's panel uses), tagged with the verdict
    user / assistant     → also a cold `turn` record of the words, with neighbouring turns as context
                           and the event's time (see turns.py)
    compaction summary   → one record per bullet of Decisions / Constraints / Changes / Open tasks,
                           plus the whole summary as a cold `summary`; its constraints are pinned
                           only where they restate the user (provenance.py)

Every record carries its source event id (provenance back to the exact log line) and who wrote it
(`provenance`, an Author: user, model, tool or summary). An event is
ingested once per session: the `ingested` table remembers it, in the same transaction as the
marking, so a re-run (or a second process) adds nothing twice.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ctxagent.context.events import ToolResultData
from ctxagent.context.history import Event
from ctxagent.context.language.detect import detect_constraints, detect_decisions, detect_todos
from ctxagent.context.language.provenance import MODEL, SUMMARY, TOOL, USER
from ctxagent.context.memory.turns import write_turn
from ctxagent.context.pins import ITEM_TAG
from ctxagent.context.test_runs import run_outcome
from ctxagent.context.tool_meta import changed_files_of

if TYPE_CHECKING:
    from ctxagent.context.memory.store import MemoryDB

TEST_TOOLS = frozenset({"run_tests"})

SECTION_TYPES = {
    "decisions": "decision", "decision": "decision", "决策": "decision", "决定": "decision",
    "constraints": "constraint", "constraint": "constraint", "约束": "constraint",
    "changes": "change", "change": "change", "变更": "change", "修改": "change",
    "open tasks": "todo", "open task": "todo", "todo": "todo", "todos": "todo", "tasks": "todo", "待办": "todo",
}
_HEADING = re.compile(
    r"^\s*(?:#+\s*)?(?:\*\*)?\s*(?P<name>[A-Za-z][A-Za-z ]*?|[\u4e00-\u9fff]+)\s*(?:\*\*)?\s*"
    r"(?:[:：]\s*(?:\*\*)?\s*(?P<rest>.*))?$"
)
_TURN_PREFIX = ITEM_TAG  # "[turn 4] …", "[turn 4, by the model] …": the turn is read, the author never

_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_NONE = re.compile(r"^\s*(?:none|n/?a|nothing|无|没有|暂无)\s*[.。]?\s*$", re.IGNORECASE)
_TURN_NOTE = re.compile(r"\((?:turn|t)\s*(\d+)\)|\bturn\s+(\d+)\b|\bt(\d+)\b|第\s*(\d+)\s*轮", re.IGNORECASE)


def _claim(store: MemoryDB, session: str, event: Event, turn: int) -> bool:
    """Mark the event as ingested; False if it already was (by us or another process)."""
    with store._write() as conn:
        cur = conn.execute("INSERT OR IGNORE INTO ingested (session, event_id, turn) VALUES (?, ?, ?)", (session, event.id, turn))
        return cur.rowcount == 1


def _turn_before(store: MemoryDB, session: str, event_id: int) -> int:
    with store._lock:
        row = store.conn.execute(
            "SELECT turn FROM ingested WHERE session = ? AND event_id <= ? ORDER BY event_id DESC LIMIT 1", (session, event_id)
        ).fetchone()
    return int(row[0]) if row else 0


def ingest_events(store: MemoryDB, events: list[Event], session: str) -> list[int]:
    """Write the records `events` imply; return the ids written or confirmed, in order."""
    if not events:
        return []
    ids: list[int] = []
    with store._write():  # one transaction for the batch; each event is a savepoint of it
        failed = _ingest(store, events, session, ids)
    if failed is not None:  # what came before the failing event is kept; it and what follows are not
        raise failed
    return ids


def _ingest(store: MemoryDB, events: list[Event], session: str, ids: list[int]) -> Exception | None:
    turn = _turn_before(store, session, events[0].id)
    for ev in events:
        if ev.kind == "user":
            turn = ev.user.turn or turn
        elif ev.turn is not None:
            turn = ev.turn
        try:
            with store._write():  # an event that fails leaves nothing, so it stays unclaimed for a later ingest
                if not _claim(store, session, ev, turn):
                    continue
                found = _records_for(store, ev, session, turn)
        except Exception as exc:
            return exc
        ids.extend(found)
    return None


def _records_for(store: MemoryDB, ev: Event, session: str, turn: int) -> list[int]:
    common: dict[str, Any] = {"session": session, "turn": turn, "source_events": [ev.id]}
    out: list[int] = []
    if ev.kind == "user":
        text = ev.user.user_words  # a project command's text is the repository's: its turn record keeps it
        if text.strip():
            store.record_user_text(session, ev.id, turn, text)
        common["provenance"] = USER
        constraints = detect_constraints(text)
        for s in constraints:
            out.append(store.add(s, "constraint", pinned=True, context=text if len(text) < 2000 else "", **common))
        for s in detect_decisions(text):
            if s not in constraints:
                out.append(store.add(s, "decision", **common))
        for s in detect_todos(text):
            out.append(store.add(s, "todo", status="open", **common))
    elif ev.kind == "assistant":
        common["provenance"] = MODEL
        text = ev.assistant.text
        for s in detect_decisions(text):
            out.append(store.add(s, "decision", importance=0.6, **common))
        for s in detect_todos(text):
            out.append(store.add(s, "todo", status="open", **common))
    if ev.kind in ("user", "assistant") and (rid := write_turn(store, ev, session, turn)) is not None:
        out.append(rid)
    if ev.kind == "tool_result":
        out.extend(_tool_records(store, ev.tool_result, {**common, "provenance": TOOL}))
    elif ev.kind == "compaction":
        out.extend(_compaction_records(store, ev, session, turn))
    return out


def _ranges(spans: Any) -> str:
    parts: list[str] = []
    for span in spans or []:
        if isinstance(span, (list, tuple)) and len(span) == 2:
            a, b = int(span[0]), int(span[1])
            parts.append(str(a) if a == b else f"{a}-{b}")
    return ", ".join(parts)


def _tool_records(store: MemoryDB, result: ToolResultData, common: dict[str, Any]) -> list[int]:
    name = result.name
    meta = result.meta
    if result.is_error:
        return []
    out: list[int] = []
    changed = changed_files_of(None, result)  # the loop records changed files in meta for every call
    if changed:
        lines = (meta.model_extra or {}).get("lines") or {}
        verb = "wrote" if name in ("write_file", "Write") else "edited"
        for f in changed:
            spans = _ranges(lines.get(f) if isinstance(lines, dict) else None)
            text = f"{verb} {f}" + (f" lines {spans}" if spans else "")
            out.append(store.add(text, "change", files=[f], tags=[name], merge=False, **common))
    elif name in TEST_TOOLS and (outcome := run_outcome(meta)) is not None:
        # the one rule (context/test_runs.py): the exit code and the counts, as the app's panel shows them
        out.append(store.add(outcome.words, "note", tags=["tests", outcome.verdict], merge=False, **common))
    return out


def parse_summary(summary: str) -> list[tuple[str, str]]:
    """(record type, item text) for each item under a known section heading of a compaction summary."""
    items: list[tuple[str, str]] = []
    section: str | None = None
    for raw in (summary or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        is_bullet = bool(_BULLET.match(line))
        if not is_bullet:
            m = _HEADING.match(line)
            name = (m.group("name").strip().lower() if m else "")
            if m and name in SECTION_TYPES:
                section = SECTION_TYPES[name]
                rest = (m.group("rest") or "").strip().strip("*").strip()
                if rest and not _NONE.match(rest):
                    items.extend((section, s.strip()) for s in re.split(r"[;；]", rest) if s.strip())
                continue
        if section is None:
            continue
        item = _BULLET.sub("", line).strip()
        if item and not _NONE.match(item):
            items.append((section, item))
    return items


def _compaction_records(store: MemoryDB, ev: Event, session: str, turn: int) -> list[int]:
    c = ev.compaction
    summary = c.summary
    if not summary.strip():
        return []
    first_id = c.first_id
    # Items get the turn where the masked range begins (or the one they name), so a summary never
    # outranks a newer statement made after the decision it restates.
    start_turn = _turn_before(store, session, first_id) or turn
    out: list[int] = []
    sources = [ev.id]
    for type_, raw_item in parse_summary(summary):
        prefix = _TURN_PREFIX.match(raw_item)  # the extractive summarizer writes "[turn 4, by the user] …"
        item = raw_item[prefix.end():] if prefix else raw_item
        m = prefix or _TURN_NOTE.search(item)
        item_turn = next((int(g) for g in m.groups() if g), start_turn) if m else start_turn
        kw: dict[str, Any] = {"session": session, "turn": min(item_turn, turn) if turn else item_turn, "source_events": sources,
                              "provenance": SUMMARY}
        if type_ == "change":
            files = re.findall(r"[\w./-]+\.[A-Za-z0-9]{1,6}\b", item)
            out.append(store.add(item, "change", files=files[:5], **kw))
        elif type_ == "todo":
            out.append(store.add(item, "todo", status="open", **kw))
        else:
            out.append(store.add(item, type_, **kw))
    out.append(store.add(summary, "summary", layer="cold", merge=False, context=f"compaction of events {first_id}-{c.last_id}",
                         session=session, turn=turn, source_events=sources, provenance=SUMMARY))
    return out
