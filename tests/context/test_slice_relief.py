"""Slice enforcement (context/builder/slice_relief.py): tool traffic over the tools slice is pruned in the view,
oldest first, down to the lower watermark, without touching the protected recent steps, and with
hysteresis — the pruned set only grows, in jumps, so the request prefix is stable between jumps."""

from __future__ import annotations

import math

import pytest
from ctx_helpers import Log, numbered_lines, run
from ctxagent.context.budget import Budget
from ctxagent.context.builder.dispatch import request_sha256
from ctxagent.context.builder.inputs import BuildResult
from ctxagent.context.builder.slice_relief import chunk_steps, slice_cut
from ctxagent.context.errors import ConfigError
from ctxagent.context.prune import cleared_arguments, cleared_text, files_named, pruned_text
from ctxagent.context.request import Message
from ctxagent.context.tokens import count_message, get_counter

C = get_counter("o200k_base")
WINDOW = 400_000  # large: the request never nears W − reserve, so only the slice rule acts


def traffic(res: BuildResult) -> int:
    """Tool traffic shown: results and the assistant messages that call tools."""
    return sum(count_message(m, C) for m in res.request.messages if m.role == "tool" or (m.role == "assistant" and m.tool_calls))


def bounds(budget: Budget, res: BuildResult) -> tuple[float, float]:
    spec = res.report.used["tools"] - sum(count_message(m, C) for m in res.request.messages if m.role == "tool")
    slice_tokens = budget.base("tools") - spec
    return budget.tools_low * slice_tokens, budget.tools_high * slice_tokens


def long_turn(steps: int, lines: int = 100) -> tuple[Log, list[int]]:
    log = Log()
    log.user("Refactor the parser module by module.")
    ids = [log.step("read_file", {"path": f"src/mod{i}.py"}, numbered_lines(lines, f"mod{i}")).id for i in range(steps)]
    return log, ids


def test_tools_over_budget_are_pruned_oldest_first_down_to_the_watermark() -> None:
    log, ids = long_turn(60)
    budget = Budget(WINDOW, max_output=4096)
    full = run(log, strategy="full")
    res = run(log, budget=budget)
    low, high = bounds(budget, res)
    assert traffic(full) > high  # the slice is over its budget, the window is not
    assert full.report.total < budget.limit
    assert res.compaction is None and res.pruned_ids
    largest_saving = max(count_message(m, C) for m in full.request.messages if m.role == "tool")
    assert low - largest_saving < traffic(res) <= high
    # oldest first: the cut results are the oldest ones, contiguous (their calls' arguments are short,
    # so only results shrink), each cleared to one line that says where the original is
    assert res.pruned_ids == ids[: len(res.pruned_ids)]
    cut = [m for m in res.request.messages if m.event_id in res.pruned_ids]
    assert all(m.content.startswith("[cleared: old read_file output, 100 lines — read_event id=") for m in cut)
    assert all(count_message(m, C) < 60 for m in cut)
    assert all("[cleared" not in str(e.data.get("content", "")) for e in log.events)  # the log is untouched


def test_the_last_protected_steps_are_untouched_in_a_long_turn() -> None:
    log, ids = long_turn(60)
    budget = Budget(WINDOW, max_output=4096)
    res = run(log, budget=budget)
    assert not set(ids[-budget.protect_steps:]) & set(res.pruned_ids)
    tight = run(log, budget=Budget(WINDOW, max_output=4096, tools_low=0.05, tools_high=0.1))
    # everything older may go; the boundary moves in chunks of steps, so 8 to 15 steps stay verbatim
    chunk = chunk_steps(budget.protect_steps, budget.step_chunk)
    aged = (len(ids) - budget.protect_steps) // chunk * chunk
    assert set(tight.pruned_ids) == set(ids[:aged]) and len(ids) - aged < budget.protect_steps + chunk


def test_protected_turns_are_untouched() -> None:
    log = Log()
    log.user("First: read everything.")
    old = [log.step("read_file", {"path": f"a{i}.py"}, numbered_lines(80, f"a{i}")).id for i in range(40)]
    recent: list[int] = []
    for turn in ("Second: check b.", "Third: check c."):
        log.user(turn)
        recent += [log.step("read_file", {"path": f"{turn[0]}{i}.py"}, numbered_lines(80, "x")).id for i in range(3)]
    res = run(log, budget=Budget(WINDOW, max_output=4096, tools_low=0.05, tools_high=0.1), protect_turns=2)
    assert res.pruned_ids and set(res.pruned_ids) <= set(old)
    shown = {m.event_id: m.content for m in res.request.messages}
    for eid in recent:
        assert shown[eid] == log.events[eid].data["content"]


def test_no_prune_while_the_tools_slice_is_within_budget() -> None:
    log, _ = long_turn(20)
    budget = Budget(WINDOW, max_output=4096)
    res = run(log, budget=budget)
    assert traffic(res) <= bounds(budget, res)[1]
    assert res.pruned_ids == [] and res.report.pruned == 0 and res.report.loss_pct == 0


def grow(budget: Budget, steps: int) -> list[BuildResult]:
    """Build before every model call of a growing one-turn session, like the agent loop does."""
    log = Log()
    log.user("Read the modules one by one.")
    out = [run(log, budget=budget)]
    for i in range(steps):
        log.step("read_file", {"path": f"src/m{i}.py"}, numbered_lines(60, f"m{i}"))
        out.append(run(log, budget=budget))
    return out


def history(res: BuildResult) -> list[Message]:
    return [m for m in res.request.messages if m.kind != "warm"]


def test_hysteresis_prunes_in_jumps_and_keeps_the_prefix_stable_between_them() -> None:
    builds = grow(Budget(WINDOW, max_output=4096), 120)
    jumps = 0
    for before, after in zip(builds, builds[1:], strict=False):
        assert set(before.pruned_ids) <= set(after.pruned_ids)  # the pruned set only grows
        # what the request calls stable (the provider's fourth cache breakpoint) survives the next build, jump or not
        stable = before.request.stable_messages
        assert [m.to_dict() for m in after.request.messages[:stable]] == [m.to_dict() for m in before.request.messages[:stable]]
        assert stable <= after.request.stable_messages
        if set(after.pruned_ids) != set(before.pruned_ids):
            jumps += 1
        else:  # between jumps the previous history is an exact prefix of the next one
            assert history(after)[: len(history(before))] == history(before)
    eager = grow(Budget(WINDOW, max_output=4096, tools_low=0.59), 120)  # (almost) no hysteresis
    eager_jumps = sum(set(a.pruned_ids) != set(b.pruned_ids) for b, a in zip(eager, eager[1:], strict=False))
    assert 1 <= jumps and jumps * 4 <= eager_jumps
    last = builds[-1].request
    assert last.stable_messages > 0 and last.messages[last.stable_messages - 1].event_id in builds[-1].pruned_ids


def test_after_a_cut_the_request_names_where_the_previous_cut_ended() -> None:
    # a slice that stays over its watermark: every candidate is cleared, and steps age into the cut a chunk at a time
    builds = grow(Budget(WINDOW, max_output=4096, tools_low=0.05, tools_high=0.1, step_chunk=1.0), 80)
    found = 0
    for before, after in zip(builds, builds[1:], strict=False):
        anchor, stable = after.request.anchor_messages, after.request.stable_messages
        assert anchor == 0 or 0 < anchor < stable
        if anchor:  # the part before it is the same as in the request before (the cut set only grows, oldest first)
            assert [m.to_dict() for m in after.request.messages[:anchor]] == [m.to_dict() for m in before.request.messages[:anchor]]
        if set(after.pruned_ids) != set(before.pruned_ids) and before.request.stable_messages:
            # a jump of a chunk of steps: the anchor is the cut part's end in the request before it
            assert anchor == before.request.stable_messages < stable
            found += 1
    assert found >= 3
    assert run(Log(), budget=Budget(WINDOW, max_output=4096)).request.anchor_messages == 0


def test_slice_cut_is_quantized() -> None:
    budget = Budget(WINDOW, max_output=4096, tools_high=1.0, tools_low=0.6)  # tools slice 60,000: high 60,000, low 36,000
    assert slice_cut(budget, 60_000, 0) == 0
    assert slice_cut(budget, 60_001, 0) == 24_000  # one step of high − low
    assert slice_cut(budget, 84_000, 0) == 24_000
    assert slice_cut(budget, 84_001, 0) == 48_000
    assert slice_cut(budget, 60_000, 1_000) == 23_600  # the tool schemas count against the slice
    assert slice_cut(Budget(WINDOW, max_output=4096, tools_high=math.inf), 10**9, 0) == 0  # off


def test_long_call_arguments_are_cut_and_paths_and_short_ones_kept() -> None:
    content = "header\n" + "x = 1\n" * 300 + "import helpers/util.py  # 中文注释 配置.toml\n" + "y = 2\n" * 300
    long_path = "/home/user/projects/a-very-long-worktree-name/" + "deep/" * 30 + "module.py"
    command = "pytest tests/test_parser.py -k 'not slow' -x -q"
    args = cleared_arguments({"file_path": long_path, "content": content, "mode": "w", "command": command}, 7)
    assert args["file_path"] == long_path and args["mode"] == "w" and args["command"] == command
    assert args["content"].startswith("header\nx = 1") and len(args["content"]) < 200
    assert "read_event id=7" in args["content"]
    log, _ = long_turn(0)
    for i in range(30):
        (cid,) = log.assistant("Writing.", [("write_file", {"path": f"src/w{i}.py", "content": content})])
        log.tool(cid, "write_file", "ok")
    res = run(log, budget=Budget(WINDOW, max_output=4096, step_chunk=1.0))
    cut = [m for m in res.request.messages if m.event_id in res.pruned_ids and m.role == "assistant"]
    assert cut and all(m.tool_calls[0].arguments["path"].startswith("src/w") for m in cut)
    assert all("[cleared — read_event id=" in m.tool_calls[0].arguments["content"] for m in cut)
    assert all(m.content == "Writing." for m in cut)  # the agent's own words stay


def test_a_cleared_result_keeps_where_it_is_the_files_it_named_and_its_failures() -> None:
    output = "\n".join(["============ test session starts ============", *(f"tests/test_m.py::test_{i} PASSED" for i in range(40)),
                        "FAILED tests/test_parser.py::test_unicode - AssertionError: 不要 drop BOM",
                        "FAILED tests/test_lexer.py::test_eof", "==== 2 failed, 40 passed in 1.2s ===="])
    stub = cleared_text(output, "bash", 12)
    first, *failures = stub.splitlines()
    assert first.startswith("[cleared: old bash output, 44 lines — read_event id=12; files named in the cut part: ")
    assert "test_parser.py" in first and "test_lexer.py" in first
    assert any("test_unicode" in f for f in failures) and any("test_eof" in f for f in failures)
    assert cleared_text("one line", "grep", 3, {"handle": "abc123"}) == "[cleared: old grep output, 1 line — read_spill handle=abc123]"


def test_a_pruned_preview_names_the_files_it_cut() -> None:
    lines = [f"{i:04d} ok" for i in range(400)]
    lines[200] = "src/deep/hidden_module.py:12: def needle():"
    lines[201] = "docs/设计.md: 不要修改"
    text = pruned_text("\n".join(lines), C, 3)
    assert "hidden_module.py" in text and "设计.md" in text
    assert files_named("v1.2.3 and 3.14 and a.b.c/x.rs") == ["x.rs"]


def test_budget_validates_the_watermarks() -> None:
    with pytest.raises(ConfigError):
        Budget(WINDOW, tools_low=0.8, tools_high=0.5)
    with pytest.raises(ConfigError):
        Budget(WINDOW, protect_steps=-1)
    with pytest.raises(ConfigError):
        Budget(WINDOW, step_chunk=0)


def test_a_longer_step_chunk_cuts_more_rarely_and_keeps_more_steps() -> None:
    budget = Budget(WINDOW, max_output=4096, tools_low=0.05, tools_high=0.1, step_chunk=1.0)
    longer = Budget(WINDOW, max_output=4096, tools_low=0.05, tools_high=0.1, step_chunk=3.0)
    short, long = grow(budget, 80), grow(longer, 80)

    def jumps(builds: list[BuildResult]) -> int:
        return sum(set(a.pruned_ids) != set(b.pruned_ids) for b, a in zip(builds, builds[1:], strict=False))

    assert 0 < jumps(long) < jumps(short)
    # verbatim: the last protect_steps steps and up to chunk − 1 more
    steps = len([m for m in long[-1].request.messages if m.role == "assistant"])
    kept = steps - len(long[-1].pruned_ids)
    assert longer.protect_steps <= kept < longer.protect_steps + chunk_steps(longer.protect_steps, longer.step_chunk)
    assert sum(len(b.pruned_ids) for b in short) > sum(len(b.pruned_ids) for b in long)  # more verbatim on the way


def timed_session(gap_at: int | None, steps: int = 40) -> tuple[Log, list[BuildResult]]:
    """A one-turn session, 30 s a step, built before every model call; `gap_at`: the step after which
    the user was away for 10 minutes (the provider's prompt cache expired meanwhile)."""
    log = Log()
    log.now = 1_000_000.0
    log.user("Read the modules one by one.")
    budget = Budget(WINDOW, max_output=4096, step_chunk=1.0)  # short chunks: a 40-step session ages steps into cuts
    builds = [run(log, budget=budget)]
    for i in range(steps):
        log.now += 600.0 if i == gap_at else 30.0
        log.step("read_file", {"path": f"src/m{i}.py"}, numbered_lines(60, f"m{i}"))
        builds.append(run(log, budget=budget))
    return log, builds


def test_a_cold_cache_is_where_relief_happens_and_later_builds_keep_it() -> None:
    _, warm = timed_session(None)
    log, cold = timed_session(20)
    budget = Budget(WINDOW, max_output=4096, step_chunk=1.0)
    assert all(b.pruned_ids == [] for b in warm)  # 40 reads never reach the slice's high watermark
    at = cold[21]  # built right after the 10-minute gap: the whole request is written to the cache anyway
    assert cold[20].pruned_ids == [] and at.pruned_ids
    reads = [e.id for e in log.events if e.kind == "tool_result"]
    chunk = chunk_steps(budget.protect_steps, budget.step_chunk)
    aged = (21 - budget.protect_steps) // chunk * chunk  # the low watermark is under the protected steps alone:
    assert at.pruned_ids == reads[:aged]  # every read before the protected steps goes, oldest first, and no other
    assert all(m.content.startswith("[cleared: ") for m in at.request.messages if m.event_id in at.pruned_ids)
    for before, after in zip(cold[21:], cold[22:], strict=False):  # warm again: the cut stays, the prefix holds
        assert set(before.pruned_ids) <= set(after.pruned_ids)
        stable = before.request.stable_messages
        assert [m.to_dict() for m in after.request.messages[:stable]] == [m.to_dict() for m in before.request.messages[:stable]]
    assert stable > 0
    # rebuilt from the log as it was then, with a fresh cache (as inspect does): the same request
    then = Log()
    then.events = list(log.events[: 1 + 2 * 21])
    assert request_sha256(run(then, budget=budget).request.to_dict()) == request_sha256(at.request.to_dict())


def test_a_model_switch_is_a_cold_cache_too() -> None:
    budget = Budget(WINDOW, max_output=4096, step_chunk=1.0)
    log = Log()
    log.user("Read the modules one by one.")
    builds: list[BuildResult] = []
    for i in range(40):
        log.step("read_file", {"path": f"src/m{i}.py"}, numbered_lines(60, f"m{i}"))
        model = "anthropic:claude-opus-5-5" if i < 20 else "openai:gpt-6.1-sol"  # /model after step 20
        builds.append(run(log, budget=budget, model=model))
        log.add("context_report", step=i + 1, report={}, model=model)
    assert all(b.pruned_ids == [] for b in builds[:20])
    switched = builds[20]
    reads = [e.id for e in log.events if e.kind == "tool_result"]
    chunk = chunk_steps(budget.protect_steps, budget.step_chunk)
    assert switched.pruned_ids == reads[: (21 - budget.protect_steps) // chunk * chunk]
    for before, after in zip(builds[20:], builds[21:], strict=False):  # the same model again: the cut stays
        assert set(before.pruned_ids) <= set(after.pruned_ids)
    same = Log()
    same.events = [e for e in log.events if e.kind != "context_report"]  # no records of the switch: no cut
    assert run(same, budget=budget).pruned_ids == []


def test_a_log_written_before_the_step_chunk_was_recorded_rebuilds_with_the_one_it_had() -> None:
    from ctxagent.context.builder.inputs import BuildInputs
    from ctxagent.context.events import BuildParams

    def rebuilt(params: BuildParams) -> Budget:
        return BuildInputs.from_params(params, events=[], system="s", tools=[], counter=C, step=1, turn=1).budget

    assert rebuilt(BuildParams(window=WINDOW, max_output=4096)).step_chunk == 1.0
    assert rebuilt(BuildParams(window=WINDOW, max_output=4096, step_chunk=3.0)).step_chunk == 3.0
