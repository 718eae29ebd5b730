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


# -- the tools-slice walk, the recall cue ---------------------------------------------------------
def slice_session(steps: int, cache_per_step: bool, idle: bool = True,
                  resumes: list[int] | None = None) -> tuple[list[int], list[int]]:
    """A long agentic turn in a window the history never nears, so the tools-slice rule alone cuts it,
    with an idle gap (a cold prompt cache) every 25 steps (`idle`). Returns, per build, the slice walks
    done afresh and whether the build equals one with a cold cache (1) or not (0); `resumes` gets, per
    build, the walks gone on from an earlier one's stop."""
    cache = BuildCache()
    log = Log()
    log.user("Refactor every module; keep the public API.")
    walks: list[int] = []
    same: list[int] = []
    for i in range(steps):
        log.now += 900.0 if idle and i % 25 == 0 else 5.0
        log.step("read_file", {"path": f"src/m{i}.py"}, "\n".join(f"def f{i}_{j}(): return {j}  # 第{j}行" for j in range(80)))
        if cache_per_step:
            cache = BuildCache()
        before, resumed = cache.stats.slice_walks, cache.stats.slice_resumes
        warm = build(inputs(log, window=200_000, cache=cache, step=i + 1, model="m"))
        walks.append(cache.stats.slice_walks - before)
        if resumes is not None:
            resumes.append(cache.stats.slice_resumes - resumed)
        same.append(int(fingerprint(warm) == fingerprint(build(inputs(log, window=200_000, cache=BuildCache(), step=i + 1,
                                                                       model="m")))))
        log.add("context_report", step=i + 1, report={}, model="m")
    return walks, same


def test_the_tools_slice_is_walked_again_only_when_its_cut_moves() -> None:
    walks, same = slice_session(160, cache_per_step=False)
    assert all(same)
    cutting = [i for i, w in enumerate(walks) if w]
    assert len(cutting) >= 5  # the slice did cut, again and again, and at the cold starts
    # between the jumps of the cut (and of the protected steps' boundary) a build looks the walk up
    assert sum(walks[40:]) <= len(walks[40:]) // 3


def test_at_a_jump_the_tools_slice_walk_goes_on_from_where_the_last_one_stopped() -> None:
    resumes: list[int] = []
    walks, same = slice_session(160, cache_per_step=False, idle=False, resumes=resumes)
    assert all(same)  # each build equals one with a cold cache, whose walk starts from the first slot
    assert sum(resumes) >= 5  # the cut and the protected steps' boundary jumped, again and again
    assert sum(walks) <= 2  # ... and no jump walked the slots afresh (no cold start, no compaction)


def test_without_a_warm_cache_the_tools_slice_is_walked_at_every_build() -> None:
    walks, same = slice_session(60, cache_per_step=True)  # the control for the test above
    assert all(same)
    assert sum(walks[30:]) == len(walks[30:])


def recent_files_by_scan(events: list[Event], limit: int = 10) -> list[str]:
    """The definition: the first `limit` distinct names in the events read newest first (a result's
    files, a call's path)."""
    names: list[str] = []
    for ev in reversed(events):
        if ev.kind == "tool_result":
            names += ev.tool_result.meta.files
        elif ev.kind == "assistant":
            names += [p for c in ev.assistant.tool_calls if isinstance(p := c.arguments.get("path"), str)]
    return list(dict.fromkeys(names))[:limit]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["read", "grep", "user"]), st.lists(st.sampled_from("abcdefghijklmn"), max_size=4)),
                max_size=40))
def test_the_recall_cue_folded_step_by_step_equals_a_scan_of_the_log(script: list[tuple[str, list[str]]]) -> None:
    from ctxagent.context.builder.cache import RecallCue

    log = Log()
    cue = RecallCue()
    fed = 0
    for kind, names in script:
        if kind == "user":
            log.user(f"please look at {' '.join(names)}")
        elif kind == "read":
            log.step("read_file", {"path": f"src/{names[0]}.py" if names else 7}, "text", meta={"files": [f"{n}.py" for n in names]})
        else:
            log.step("grep", {"pattern": "x"}, "hits", meta={"files": [f"lib/{n}.py" for n in names]})
        cue = cue.feed(log.events[fed:])
        fed = len(log.events)
        assert list(cue.files) == recent_files_by_scan(log.events)
        assert cue.query == next((e.user.text for e in reversed(log.events) if e.kind == "user"), "")
