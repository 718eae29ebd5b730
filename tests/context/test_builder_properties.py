"""Property tests: every ctxagent build fits W − reserve (calibrated too), is deterministic, and a
re-build from the log with the returned compaction appended is byte-identical."""

from __future__ import annotations

import math
from typing import Any

from ctx_helpers import Log, counter, inputs
from ctxagent.context.budget import Budget
from ctxagent.context.builder.dispatch import build, request_sha256
from ctxagent.context.history import Event
from ctxagent.context.tokens import count_request
from hypothesis import HealthCheck, given, settings, strategies as st

WORDS = ["parser", "config", "数据库", "配置文件", "登录", "fix", "test", "PostgreSQL", "模块", "error", "{", "}", '"', "\n"]
CONSTRAINTS = ["Don't modify config files.", "不要修改配置文件。", "Always run the tests.", "必须使用 PostgreSQL。", "Never push to main."]

text_st = st.lists(st.sampled_from(WORDS), min_size=1, max_size=60).map(" ".join)

tool_content_st = st.one_of(
    text_st,
    st.integers(0, 20_000).map(lambda n: "\n".join(f"{i} 行 line {i} value={i * 3}" for i in range(n))),
    st.integers(1, 60_000).map(lambda n: '{"blob": "' + "ab" * n + '"}'),  # one giant unbroken line
    st.just("no matches found"),
    st.integers(1, 3000).map(lambda n: "中文输出，不要修改。" * n),
)

step_st = st.fixed_dictionaries(
    {
        "text": st.one_of(st.just(""), text_st),
        "calls": st.lists(
            st.fixed_dictionaries(
                {
                    "name": st.sampled_from(["read_file", "grep", "edit_file", "shell"]),
                    "content": tool_content_st,
                    "error": st.booleans(),
                    "spilled": st.booleans(),
                    "missing": st.integers(0, 9).map(lambda n: n == 0),
                }
            ),
            max_size=2,
        ),
    }
)

turn_st = st.fixed_dictionaries(
    {
        "user": text_st,
        "constraint": st.one_of(st.none(), st.sampled_from(CONSTRAINTS)),
        "steps": st.lists(step_st, max_size=3),
    }
)
# now and then a marathon turn: many steps in one turn (in-turn compaction)
turns_st = st.tuples(st.lists(turn_st, min_size=1, max_size=10), st.lists(step_st, max_size=40)).map(
    lambda t: [*t[0][:-1], {**t[0][-1], "steps": t[0][-1]["steps"] + t[1]}]
)


def make_log(turns: list[dict[str, Any]]) -> Log:
    log = Log()
    log.add("session_start", session="p")
    for t in turns:
        log.user(((t["constraint"] + " ") if t["constraint"] else "") + t["user"])
        for s in t["steps"]:
            # an edit carries its new text as an argument (long ones are cut in old steps' views)
            ids = log.assistant(s["text"], [(c["name"], {"path": f"f{i}.py", **({"new_text": c["content"][:800]} if c["name"] == "edit_file" else {})})
                                            for i, c in enumerate(s["calls"])])
            for cid, c in zip(ids, s["calls"], strict=True):
                if c["missing"]:
                    continue
                extra: dict[str, Any] = {}
                if c["spilled"]:
                    extra["spill"] = {"handle": "0123456789ab", "lines": 10_000, "tokens": 250_000}
                if c["name"] == "edit_file" and not c["error"]:
                    extra["meta"] = {"files": [f"src/{cid}.py"]}
                log.tool(cid, c["name"], c["content"], c["error"], **extra)
    return log


settings.register_profile("ctx", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(settings.get_profile("ctx"))
@given(
    turns=turns_st,
    window=st.integers(8_000, 64_000),
    max_output=st.integers(256, 2048),
    ratio=st.floats(0.8, 1.5),
    protect=st.integers(0, 3),
)
def test_every_build_fits_and_is_reproducible(turns, window, max_output, ratio, protect) -> None:  # noqa: ANN001
    log = make_log(turns)
    c = counter()
    budget = Budget(window, max_output=max_output)
    res = build(inputs(log, budget=budget, calibration_ratio=ratio, protect_turns=protect, c=c))
    total = count_request(res.request, c)
    assert total == res.report.total
    assert total <= budget.limit
    assert math.ceil(total * ratio) <= budget.limit
    assert res.report.usage_pct <= 100.0
    # the newest user message is always shown verbatim and last among user texts
    newest = max(e.id for e in log.events if e.kind == "user")
    assert any(m.event_id == newest and m.kind == "message" for m in res.request.messages)
    # tool messages always answer a call of the assistant message right before them
    open_calls: set[str] = set()
    for m in res.request.messages:
        if m.role == "assistant":
            open_calls = {tc.id for tc in m.tool_calls}
        elif m.role == "tool":
            assert m.tool_call_id in open_calls
            open_calls.discard(m.tool_call_id)
    again = build(inputs(log, budget=budget, calibration_ratio=ratio, protect_turns=protect, c=c))
    assert request_sha256(again.request.to_dict()) == request_sha256(res.request.to_dict())
    assert res.compaction == (res.compactions[0].data if res.compactions else None)
    if res.compactions:
        for record in res.compactions:
            log.events.append(Event(len(log.events), "compaction", record.data.to_data()))
        replay = build(inputs(log, budget=budget, calibration_ratio=ratio, protect_turns=protect, c=c))
        assert replay.compactions == []
        assert request_sha256(replay.request.to_dict()) == request_sha256(res.request.to_dict())


@settings(settings.get_profile("ctx"), max_examples=15)
@given(turns=st.lists(turn_st, min_size=1, max_size=6), window=st.integers(8_000, 32_000))
def test_full_strategy_reports_but_never_raises(turns, window) -> None:  # noqa: ANN001
    log = make_log(turns)
    res = build(inputs(log, budget=Budget(window, max_output=1024), strategy="full"))
    assert res.report.total == count_request(res.request, counter())
    if res.report.total > Budget(window, max_output=1024).limit:
        assert any("over the limit" in n for n in res.report.notes)


chatty_turn_st = st.fixed_dictionaries(
    {
        "user": st.lists(st.sampled_from(WORDS), min_size=20, max_size=120).map(" ".join),
        "constraint": st.one_of(st.none(), st.sampled_from(CONSTRAINTS)),
        "steps": st.lists(step_st, min_size=1, max_size=2),
    }
)


@settings(settings.get_profile("ctx"), max_examples=15)
@given(turns=st.lists(chatty_turn_st, min_size=12, max_size=30), window=st.integers(6_000, 10_000))
def test_long_sessions_in_small_windows_compact_and_fit(turns, window) -> None:  # noqa: ANN001
    log = make_log(turns)
    budget = Budget(window, max_output=1024)
    res = build(inputs(log, budget=budget))
    assert res.report.total <= budget.limit
    pinned = {c for t in turns if t["constraint"] for c in [t["constraint"]]}
    history = "\n".join(m.content for m in res.request.messages if m.kind == "message" and m.role == "user")
    for constraint in pinned:  # pinned constraints survive pruning and compaction: in their message, else the warm block
        text = constraint.rstrip("。.")
        assert text in history or text in res.warm_text
