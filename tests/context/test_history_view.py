"""Property tests for history.view(): compaction masks round-trip, rewinds restore the originals."""

from __future__ import annotations

from ctxagent.context.events import AssistantData, UserData
from ctxagent.context.history import Event, SessionLog, Summary, item_id, view
from hypothesis import given, settings, strategies as st

KINDS = st.sampled_from(["user", "assistant", "tool_result", "context_report", "memory"])


def _append(events: list[Event], kind: str, **data) -> Event:  # noqa: ANN003
    ev = Event(len(events), kind, data)
    events.append(ev)
    return ev


def _covered(items) -> set[int]:  # noqa: ANN001
    out: set[int] = set()
    for it in items:
        if isinstance(it, Summary):
            out.update(range(it.first_id, it.last_id + 1))
    return out


@st.composite
def compacted_log(draw):  # noqa: ANN001, ANN201
    events: list[Event] = []
    for _ in range(draw(st.integers(1, 12))):
        for kind in draw(st.lists(KINDS, min_size=1, max_size=5)):
            _append(events, kind, text=f"e{len(events)}")
        if draw(st.booleans()):
            items = view(events)
            if len(items) >= 2:
                end = draw(st.integers(0, len(items) - 2))
                last = items[end]
                last_id = last.last_id if isinstance(last, Summary) else last.id
                # like the builder: a range always starts at the first visible item (nested compactions)
                _append(events, "compaction", first_id=item_id(items[0]), last_id=last_id, summary=f"S{len(events)}")
    return events


@settings(max_examples=80, deadline=None)
@given(compacted_log())
def test_masking_round_trips(events: list[Event]) -> None:
    items = view(events)
    message_ids = [e.id for e in events if e.kind in ("user", "assistant", "tool_result")]
    visible = [it.id for it in items if isinstance(it, Event)]
    covered = _covered(items) & set(message_ids)
    assert set(visible).isdisjoint(covered)
    assert set(visible) | covered == set(message_ids)  # nothing vanished
    assert visible == sorted(visible)  # order kept
    positions = [item_id(it) for it in items]
    assert positions == sorted(positions)
    # the log itself is untouched: every original is still there
    assert [e.data.get("text") for e in events if e.kind == "user"] == [f"e{e.id}" for e in events if e.kind == "user"]


@settings(max_examples=80, deadline=None)
@given(compacted_log(), st.data())
def test_rewind_restores_the_past_view(events: list[Event], data) -> None:  # noqa: ANN001
    to_id = data.draw(st.integers(0, len(events)))
    before = view(events[:to_id])
    log = list(events)
    _append(log, "rewind", to_id=to_id)
    assert view(log) == before
    later = _append(log, "user", text="after the rewind")
    assert view(log) == [*before, later]


def test_rewind_past_a_compaction_shows_originals() -> None:
    events: list[Event] = []
    for i in range(6):
        _append(events, "user" if i % 2 == 0 else "assistant", text=f"m{i}")
    comp = _append(events, "compaction", first_id=0, last_id=3, summary="Decisions:\n- none")
    _append(events, "user", text="m7")
    masked = view(events)
    assert isinstance(masked[0], Summary) and [it.id for it in masked[1:]] == [4, 5, 7]
    _append(events, "rewind", to_id=comp.id)
    restored = view(events)
    assert [it.id for it in restored] == [0, 1, 2, 3, 4, 5]
    assert all(isinstance(it, Event) for it in restored)


def test_rewind_of_a_rewind_is_hidden_by_an_earlier_target() -> None:
    events: list[Event] = []
    for i in range(4):
        _append(events, "user", text=f"m{i}")
    _append(events, "rewind", to_id=2)  # id 4 hides 2, 3
    _append(events, "user", text="m5")
    _append(events, "rewind", to_id=1)  # id 6 hides 1..5, including the first rewind
    assert [it.id for it in view(events)] == [0]


def test_view_survives_a_torn_log(tmp_path) -> None:
    log = SessionLog.create(tmp_path, "s")
    log.append(UserData(text="不要修改配置文件", turn=1))
    log.append(AssistantData(text="好的", tool_calls=[]))
    log.close()
    with (tmp_path / "s.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"id": 2, "kind": "user", "data": {"te')
    loaded = SessionLog.load(tmp_path / "s.jsonl")
    assert loaded.skipped_lines == 1
    assert [it.data["text"] for it in loaded.view()] == ["不要修改配置文件", "好的"]
