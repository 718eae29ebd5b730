"""Fuzzing session-log lines through SessionLog.load: torn, wrong types, huge, nested, surrogates,
garbage bytes. Loading never raises, ids stay positions, everything read is encodable, and the log
can be appended to afterwards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ctxagent.context.events import UserData
from ctxagent.context.history import SessionLog
from hypothesis import HealthCheck, given, settings, strategies as st
from strategies import DEPTHS, JSON, deep_text

KINDS = st.sampled_from(["user", "assistant", "tool_result", "error", "compaction", "context_report", "invalid", "", "x"])
GOOD = [
    {"kind": "user", "data": {"text": "fix it 修一下", "turn": 1}},
    {"kind": "assistant", "data": {"text": "ok", "step": 1, "turn": 1, "stop_reason": "end_turn",
                                   "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a.py"}}]}},
    {"kind": "tool_result", "data": {"call_id": "c1", "name": "read_file", "content": "x = 1", "is_error": False}},
]


def _line(obj: dict[str, Any], i: int) -> bytes:
    return json.dumps({"id": i, "ts": 1.0, **obj}, ensure_ascii=False).encode("utf-8", "surrogatepass")


@st.composite
def lines(draw: st.DrawFn) -> bytes:
    i = draw(st.integers(0, 50))
    how = draw(st.sampled_from(["good", "torn", "types", "huge", "nested", "surrogate", "bytes", "json", "fields"]))
    base = dict(draw(st.sampled_from(GOOD)))
    if how == "good":
        return _line(base, i)
    if how == "torn":
        raw = _line(base, i)
        return raw[:draw(st.integers(0, max(0, len(raw) - 1)))]
    if how == "types":
        return _line({"kind": draw(KINDS), "data": draw(JSON)}, draw(st.one_of(st.integers(), st.just(i))))
    if how == "huge":
        return _line({"kind": "user", "data": {"text": "长" * draw(st.sampled_from([10_000, 1_000_000])), "turn": 1}}, i)
    if how == "nested":
        return b'{"id": %d, "kind": "assistant", "ts": 1, "data": ' % i + deep_text(draw(DEPTHS)).encode() + b"}"
    if how == "surrogate":
        text = draw(st.sampled_from(["\\udce9", "\\ud800", "\\udfff\\ud800", "ok"]))
        return b'{"id": %d, "kind": "user", "ts": 1, "data": {"text": "a%sb", "turn": 1}}' % (i, text.encode())
    if how == "bytes":
        return draw(st.binary(max_size=200)).replace(b"\n", b" ")
    if how == "fields":
        data = dict(base["data"])
        data[draw(st.sampled_from(sorted(data)))] = draw(JSON)
        return _line({"kind": base["kind"], "data": data}, i)
    return json.dumps(draw(JSON), ensure_ascii=False).encode("utf-8", "surrogatepass")


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(content=st.lists(lines(), max_size=8))
def test_any_log_lines_load_and_the_log_stays_usable(tmp_path_factory: Any, content: list[bytes]) -> None:
    path = Path(tmp_path_factory.mktemp("log")) / "s.jsonl"
    path.write_bytes(b"\n".join(content) + (b"\n" if content and content[-1].endswith(b"}") else b""))
    log = SessionLog.load(path)
    assert [e.id for e in log.events] == list(range(len(log.events)))
    for e in log.events:
        json.dumps({"kind": e.kind, "data": e.data}, ensure_ascii=False).encode("utf-8")  # no lone surrogate
        e.payload  # noqa: B018 - validated (an invalid line is an `invalid` placeholder)
    nonblank = sum(1 for raw in b"\n".join(content).split(b"\n") if raw.strip())
    assert len(log.events) + sum(1 for s in log.skipped if not s.placeholder) == nonblank
    appended = log.append(UserData(text="after the fuzz 之后", turn=99))
    log.close()
    assert appended.id == len(log.events) - 1
    again = SessionLog.load(path)
    assert again.events[-1].data["text"] == "after the fuzz 之后"
