"""BuildCache: a build with a warm cache equals a build with a cold one at every step, and the work a
step does (tokenizer calls, messages rendered, previews pruned) stays bounded as the history grows."""

from __future__ import annotations

from typing import Any

import pytest
from ctx_helpers import Log, counter, inputs
from ctxagent.context.budget import Budget
from ctxagent.context.builder.cache import BuildCache, cache_for
from ctxagent.context.builder.dispatch import build, request_sha256
from ctxagent.context.builder.inputs import BuildResult
from ctxagent.context.builder.measure import loss_pct
from ctxagent.context.history import Event, extend_view, view
from ctxagent.context.pins import PinCollector, collect_pins, live_events
from ctxagent.context.tokens import CachedCounter, get_counter
from hypothesis import given, settings, strategies as st
from test_builder_properties import make_log, turns_st


class CountingCounter:
    """The real tokenizer, counting how often it is asked (what a CachedCounter could not answer)."""

    def __init__(self) -> None:
        self.inner = get_counter("o200k_base")
        self.name = self.inner.name
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return self.inner.count(text)


def fingerprint(res: BuildResult) -> dict[str, Any]:
    return {
        "request": request_sha256(res.request.to_dict()),
        "report": res.report.to_dict(),
        "warm": res.warm_text,
        "compactions": res.compactions,
        "pruned": res.pruned_ids,
        "spilled": res.spilled_ids,
        "masked": res.masked,
    }


def replay_steps(events: list[Event], rewind_at: set[int], **kw: Any) -> int:
    """Feed `events` one by one like the agent does; before each model call (after a user message or
    a tool result) build with one warm cache and with a fresh one, and compare everything. Compaction
    records are appended like the agent appends them; rewinds are inserted at the chosen build points."""
    warm_cache = BuildCache()
    log: list[Event] = []
    builds = 0

    def add(kind: str, data: dict[str, Any]) -> None:
        log.append(Event(len(log), kind, data))

    for ev in events:
        add(ev.kind, ev.data)
        if ev.kind not in ("user", "tool_result"):
            continue
        users = [e.id for e in log if e.kind == "user"]
        if builds in rewind_at and len(users) > 1:
            add("rewind", {"to_id": users[-2]})  # back before the previous user message …
            add("user", {"text": "let's try again", "turn": 99})  # … and a new one
        warm = build(inputs(log, cache=warm_cache, step=builds + 1, **kw))
        cold = build(inputs(log, cache=BuildCache(), step=builds + 1, **kw))
        assert fingerprint(warm) == fingerprint(cold), f"warm and cold caches differ at build {builds + 1}"
        builds += 1
        for record in warm.compactions:
            add("compaction", record.data.to_data())
    return builds


@settings(max_examples=25, deadline=None, suppress_health_check=list(__import__("hypothesis").HealthCheck))
@given(
    turns=turns_st,
    window=st.integers(8_000, 40_000),
    protect=st.integers(0, 3),
    rewinds=st.sets(st.integers(1, 30), max_size=3),  # build numbers before which the user rewinds
    strategy=st.sampled_from(["ctxagent", "ctxagent", "ctxagent", "window", "full"]),
)
def test_warm_cache_equals_cold_cache_at_every_step(turns, window, protect, rewinds, strategy) -> None:  # noqa: ANN001
    events = make_log(turns).events
    builds = replay_steps(events, rewinds, budget=Budget(window, max_output=1024), protect_turns=protect, strategy=strategy)
    assert builds >= 1


def test_two_logs_sharing_one_cache_and_ids_stay_correct() -> None:
    a, b = Log(), Log()
    a.user("Fix the parser; never touch config files.")
    a.step("read_file", {"path": "src/parser.py"}, "def parse(x):\n    return x\n" * 50)
    b.user("完全不同的任务：修复登录。不要修改数据库。")
    b.step("grep", {"pattern": "login"}, "src/auth.py:3: def login(user):\n" * 80)
    shared = BuildCache()
    for log in (a, b, a, b):  # same event ids, different events: every hit is checked against its event
        warm = build(inputs(log, cache=shared))
        assert fingerprint(warm) == fingerprint(build(inputs(log, cache=BuildCache())))


def test_a_small_cache_evicts_and_stays_correct() -> None:
    log = Log()
    tiny = BuildCache(max_chars=2_000)
    for t in range(30):
        log.user(f"turn {t}: read the next module")
        log.step("read_file", {"path": f"src/m{t}.py"}, "\n".join(f"line {i} of module {t}" for i in range(200)))
        warm = build(inputs(log, window=8_000, max_output=512, cache=tiny))
        cold = build(inputs(log, window=8_000, max_output=512, cache=BuildCache()))
        assert fingerprint(warm) == fingerprint(cold)
        for record in warm.compactions:
            log.add("compaction", **record.data.to_data())


def test_binding_another_counter_empties_the_cache() -> None:
    log = Log()
    log.user("hello")
    cache = BuildCache()
    build(inputs(log, cache=cache, c=counter("o200k_base")))
    renders = cache.stats.renders
    res = build(inputs(log, cache=cache, c=counter("cl100k_base")))
    assert cache.stats.renders > renders  # re-rendered with the other tokenizer, not served stale counts
    assert fingerprint(res) == fingerprint(build(inputs(log, cache=BuildCache(), c=counter("cl100k_base"))))


def test_without_a_cache_the_counter_carries_one() -> None:
    c1, c2 = CachedCounter(get_counter("o200k_base")), CachedCounter(get_counter("o200k_base"))
    assert cache_for(c1) is cache_for(c1)
    assert cache_for(c1) is not cache_for(c2)
    own = BuildCache()
    assert cache_for(c1, own) is own


def test_extend_view_equals_view_for_tails_without_rewinds() -> None:
    log = Log()
    log.user("one")
    log.step("read_file", {"path": "a.py"}, "a")
    prefix = list(log.events)
    log.user("two")
    log.step("read_file", {"path": "b.py"}, "b")
    log.add("compaction", first_id=0, last_id=4, summary="Decisions:\n- none", method="extractive")
    log.user("three")
    assert extend_view(view(prefix), log.events[len(prefix):]) == view(log.events)
    log.add("rewind", to_id=3)
    with pytest.raises(ValueError):
        extend_view(view(prefix), log.events[len(prefix):])


def test_pin_collector_extends_like_collect_pins() -> None:
    log = Log()
    folded = PinCollector()
    for t, text in enumerate(["Never push to main.", "TODO: write the docs", "不要修改配置文件。", "ok, thanks"]):
        ev = log.user(text)
        folded.feed([ev])
        assert folded.copy().pins() == collect_pins(log.events), t


def test_report_loss_equals_the_full_recount() -> None:
    log = Log()
    for t in range(12):
        log.user(f"turn {t}")
        log.step("read_file", {"path": f"m{t}.py"}, "\n".join(f"{t}: 数据 data {i}" for i in range(300)))
    res = build(inputs(log, window=12_000, max_output=512, cache=BuildCache()))
    verbatim = {m.event_id for m in res.request.messages if m.event_id is not None and m.kind == "message"}
    verbatim -= set(res.pruned_ids) | set(res.spilled_ids)
    assert res.report.loss_pct == loss_pct(log.events, verbatim, counter())
    assert res.report.loss_pct > 0


# -- work, not time -------------------------------------------------------------------------------
def grow_and_measure(turns: int, cache_per_step: bool) -> list[dict[str, int]]:
    """A session that grows by one read (≈ 600 tokens of fresh output) and one answer per turn, built
    before every model call in a window that forces pruning and compactions. Returns the work per build."""
    raw = CountingCounter()
    c = CachedCounter(raw)
    cache = BuildCache()
    log = Log()
    out: list[dict[str, int]] = []

    def step() -> None:
        nonlocal cache
        if cache_per_step:
            cache = BuildCache()
        before = (raw.calls, cache.stats.renders, cache.stats.prunes, cache.stats.sizes)
        res = build(inputs(log, window=8_000, max_output=1024, c=c, cache=cache))
        after = (raw.calls, cache.stats.renders, cache.stats.prunes, cache.stats.sizes)
        out.append({"events": len(log.events), "tokenizer": after[0] - before[0], "renders": after[1] - before[1],
                    "prunes": after[2] - before[2], "sizes": after[3] - before[3], "compacted": len(res.compactions),
                    "messages": len(res.request.messages)})
        for record in res.compactions:
            log.add("compaction", **record.data.to_data())

    for t in range(turns):
        log.user(f"turn {t}: check module {t} — 检查模块 {t}")
        step()
        log.step("read_file", {"path": f"src/m{t}.py"}, "\n".join(f"def f{t}_{i}(x): return x * {i}  # 第{i}行" for i in range(60)))
        step()
        log.assistant(f"Module {t} looks fine; we decided to keep its API.")
    return out


def test_work_per_step_is_bounded_as_the_history_grows() -> None:
    work = grow_and_measure(150, cache_per_step=False)
    assert sum(w["compacted"] for w in work) >= 2  # the window forced compactions (the view changed under the cache)
    assert max(w["messages"] for w in work) > 20
    steady = work[10:]
    # a step tokenizes, renders, prunes and sizes only what is new: bounded by a constant, not by history
    assert max(w["tokenizer"] for w in steady) <= 40
    assert max(w["renders"] for w in steady) <= 6
    assert max(w["prunes"] for w in steady) <= 6
    assert max(w["sizes"] for w in steady) <= 4
    late, early = steady[-40:], steady[:40]
    assert sum(w["renders"] + w["prunes"] for w in late) <= sum(w["renders"] + w["prunes"] for w in early) + 40


def test_without_a_warm_cache_every_step_re_renders_the_history() -> None:
    # the control for the test above: the counters do see the O(history) work a cold cache does
    work = grow_and_measure(40, cache_per_step=True)
    assert work[-1]["renders"] >= work[-1]["messages"] - 2 > 20


def test_live_events_from_the_cache_match_after_rewinds() -> None:
    log = Log()
    for t in range(6):
        log.user(f"turn {t}")
        log.step("grep", {"pattern": "x"}, f"hit {t}")
    cache = BuildCache().bind(counter())
    cache.log_state(list(log.events))
    log.add("rewind", to_id=7)
    log.user("again")
    state = cache.log_state(list(log.events))
    assert state.live == live_events(log.events)
    assert state.items == view(log.events)
