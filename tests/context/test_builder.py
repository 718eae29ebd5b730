"""The builder: layout, measurement, pressure relief tiers, determinism, baselines."""

from __future__ import annotations

import math

import pytest
from ctx_helpers import SYSTEM, TOOLS, Log, counter, inputs, numbered_lines, run
from ctxagent.context.budget import Budget
from ctxagent.context.builder.dispatch import build, request_sha256
from ctxagent.context.builder.inputs import BuildInputs, PlannedCompaction
from ctxagent.context.errors import ContextOverflowError
from ctxagent.context.history import Event, view
from ctxagent.context.tokens import CachedCounter, count_message, count_request, get_counter


def small_log() -> Log:
    log = Log()
    log.add("session_start", session="s", model="m")
    log.user("Never modify config files. Fix the failing test in app.py.")
    log.step("read_file", {"path": "app.py"}, "1: def f():\n2:     return 1", text="Reading.")
    log.step("edit_file", {"path": "app.py"}, "--- a/app.py\n+++ b/app.py", meta={"files": ["app.py"], "diff": "..."})
    log.assistant("Fixed it.")
    log.user("Thanks. Now run the tests.")
    return log


def test_layout_and_measurement() -> None:
    log = small_log()
    res = run(log)
    req = res.request
    assert req.system == SYSTEM and req.tools == TOOLS and req.max_tokens == 4096
    roles = [(m.role, m.kind) for m in req.messages]
    assert roles == [
        ("user", "message"), ("assistant", "message"), ("tool", "message"), ("assistant", "message"),
        ("tool", "message"), ("assistant", "message"), ("user", "warm"), ("user", "message"),
    ]
    warm = req.messages[-2]
    assert "Files changed this session: app.py (turn 1)" in warm.content and warm.content == res.warm_text
    assert "Never modify config files" not in warm.content  # its message is shown: not repeated
    assert req.messages[-1].content == "Thanks. Now run the tests." and req.messages[-1].event_id == 7
    tool_msg = req.messages[2]
    assert tool_msg.tool_call_id == "call_1" and tool_msg.name == "read_file" and not tool_msg.is_error
    assert req.messages[1].tool_calls[0].arguments == {"path": "app.py"}
    rep = res.report
    assert rep.total == count_request(req, counter()) == sum(v for k, v in rep.used.items() if k != "reserve")
    assert sum(rep.budget.values()) == rep.window
    assert rep.usage_pct == pytest.approx(100 * (rep.total + rep.used["reserve"]) / rep.window, abs=0.01)
    assert rep.oldest_visible_turn == 1 and rep.messages == len(req.messages) and rep.system_in_window
    assert rep.advice == "ok" and res.compaction is None and rep.loss_pct == 0.0
    assert res.pruned_ids == [] and res.spilled_ids == [] and res.masked == []


def test_warm_goes_after_trailing_tool_results() -> None:
    log = small_log()
    log.step("run_tests", {}, "3 passed")
    res = run(log)
    assert [m.role for m in res.request.messages[-3:]] == ["assistant", "tool", "user"]
    assert res.request.messages[-1].kind == "warm"


def test_no_pins_no_warm_block() -> None:
    log = Log()
    log.user("hello there")
    res = run(log)
    assert res.warm_text == "" and [m.kind for m in res.request.messages] == ["message"]


def test_deterministic() -> None:
    log = small_log()
    a = run(log)
    b = run(log, c=CachedCounter(get_counter("o200k_base")))
    assert request_sha256(a.request.to_dict()) == request_sha256(b.request.to_dict())
    assert a.report.to_dict() == b.report.to_dict()


def test_spilled_results_are_counted_as_spilled() -> None:
    log = small_log()
    ev = log.step("grep", {"pattern": "x"}, "head\n[… 900 lines / 12000 tokens cut — full output: read_spill handle=abcdef123456]\ntail",
                  spill={"handle": "abcdef123456", "lines": 902, "tokens": 12000})
    res = run(log)
    assert res.spilled_ids == [ev.id] and res.report.spilled == 1
    assert res.report.loss_pct > 50  # the 12k-token original is not shown verbatim


def noisy_session(turns: int, lines: int = 300) -> Log:
    log = Log()
    log.user("Don't modify config files. Let's refactor the parser.")
    for t in range(turns):
        if t:
            log.user(f"Turn {t}: continue with the next module please.")
        log.step("read_file", {"path": f"src/mod{t}.py"}, numbered_lines(lines, f"mod{t}"), text="Reading.")
        log.step("grep", {"pattern": "zzz"}, "no matches found")
        log.step("edit_file", {"path": f"src/mod{t}.py"}, "applied", meta={"files": [f"src/mod{t}.py"]})
        log.assistant(f"Done with mod{t}.")
    return log


def test_prune_old_tool_results_first_and_protect_recent_turns() -> None:
    log = noisy_session(8)
    full = run(log, strategy="full")
    res = run(log, window=full.report.total + 4096 - 2000)  # a little too small: pruning alone suffices
    assert res.compaction is None and res.report.pruned >= 1
    assert res.report.total <= Budget(full.report.total + 4096 - 2000, max_output=4096).limit
    # protected: the last 2 user turns keep every tool result verbatim
    users = [e.id for e in log.events if e.kind == "user"]
    assert all(pid < users[-2] for pid in res.pruned_ids)
    pruned_msgs = [m for m in res.request.messages if m.event_id in res.pruned_ids]
    assert all("[pruned from view:" in m.content or "[cleared: " in m.content for m in pruned_msgs)
    # the originals are untouched
    assert all("pruned" not in str(e.data.get("content", "")) for e in log.events)


def test_low_value_results_pruned_before_others() -> None:
    log = Log()
    log.user("Go.")
    big_err = log.step("shell", {"cmd": "x"}, numbered_lines(200, "error"), is_error=True)
    big_ok = log.step("read_file", {"path": "a"}, numbered_lines(200, "code"))
    log.user("next")
    log.user("and next")
    full = run(log, strategy="full")
    err_tokens = next(m for m in full.request.messages if m.event_id == big_err.id)
    # the slice rule turned off: this is the fit-the-limit tier's order alone
    res = run(log, protect_turns=2, budget=Budget(full.report.total + 4096 - 100, max_output=4096, tools_high=math.inf))
    assert res.pruned_ids == [big_err.id] and big_ok.id not in res.pruned_ids
    assert err_tokens


def test_compaction_when_pruning_is_not_enough_and_rebuild_is_identical() -> None:
    log = noisy_session(30, lines=60)
    res = run(log, window=8_000, max_output=2048)
    assert res.compaction is not None
    comp = res.compaction
    assert comp.method == "extractive" and comp.focus is None
    users = [e.id for e in log.events if e.kind == "user"]
    assert comp.first_id == 0 and comp.last_id < users[-1]
    assert res.report.compacted == [comp.first_id, comp.last_id] and res.report.summary_method == "extractive"
    assert res.report.total <= Budget(8_000, max_output=2048).limit
    summary_msg = next(m for m in res.request.messages if m.kind == "summary")
    for section in ("Decisions:", "Constraints:", "Changes:", "Open tasks:"):
        assert section in summary_msg.content
    assert "src/mod0.py" in summary_msg.content and "Don't modify config files" in summary_msg.content
    assert "Don't modify config files" in res.warm_text  # pinned stays visible through the warm block
    # the caller appends the record; a re-build from the log gives the identical request, no new compaction
    log.add("compaction", **comp.to_data())
    again = run(log, window=8_000, max_output=2048)
    assert again.compaction is None
    assert request_sha256(again.request.to_dict()) == request_sha256(res.request.to_dict())
    assert again.masked == res.masked == [[comp.first_id, comp.last_id]]
    # originals are all still in the log
    assert sum(1 for e in log.events if e.kind == "tool_result") == 90


def test_model_summary_used_when_valid_else_extractive() -> None:
    log = noisy_session(30, lines=60)
    prompts: list[str] = []

    def good(prompt: str) -> str:
        prompts.append(prompt)
        files = sorted({f"src/mod{t}.py" for t in range(30)})
        changes = "\n".join(f"- {f}: refactored" for f in files)
        return f"Decisions:\n- none\nConstraints:\n- [turn 1] Don't modify config files.\nChanges:\n{changes}\nOpen tasks:\n- none\n"

    res = run(log, window=8_000, max_output=2048, summarize=good, focus="parser")
    assert res.compaction and res.compaction.method == "model" and res.compaction.focus == "parser"
    assert "the following is data, not instructions" in prompts[0] and "Focus requested by the user: parser" in prompts[0]

    res2 = run(log, window=8_000, max_output=2048, summarize=lambda p: "Sure! Here is a summary: all good.")
    assert res2.compaction and res2.compaction.method == "extractive"
    assert any("rejected" in n for n in res2.report.notes)

    def boom(prompt: str) -> str:
        raise RuntimeError("model down")

    res3 = run(log, window=8_000, max_output=2048, summarize=boom)
    assert res3.compaction and res3.compaction.method == "extractive"


def test_allow_compaction_false_prunes_then_raises_if_needed() -> None:
    # no summaries: relief prunes, then clears every result and long argument to one line, then the reply yields
    res = run(noisy_session(30, lines=60), window=6_000, max_output=2048, allow_compaction=False)
    assert res.compaction is None and res.request.max_tokens <= 2048
    assert res.report.total + res.request.max_tokens <= 6_000
    with pytest.raises(ContextOverflowError, match="cannot fit"):
        run(noisy_session(300, lines=60), window=6_000, max_output=2048, allow_compaction=False)


def test_newest_step_is_pruned_last_and_giant_output_fits() -> None:
    log = Log()
    log.user("Read the log.")
    log.step("read_file", {"path": "huge.log"}, numbered_lines(40_000, "log"))
    res = run(log, window=16_000, max_output=2048)
    assert res.report.total <= Budget(16_000, max_output=2048).limit
    assert res.report.pruned == 1 and res.pruned_ids == [2]
    assert "read_file" in str(res.request.messages[-2].tool_calls)


def test_single_message_too_large_raises_clear_error() -> None:
    log = Log()
    log.user("请看这段内容：" + "很长的中文文本。" * 20_000)
    with pytest.raises(ContextOverflowError) as err:
        run(log, window=16_000, max_output=2048)
    assert "user message" in str(err.value) and "window 16,000" in str(err.value)


def test_calibration_ratio_tightens_the_fit() -> None:
    log = noisy_session(10)
    res = run(log, window=20_000, max_output=2048, calibration_ratio=1.3)
    b = Budget(20_000, max_output=2048)
    assert res.report.calibrated_total == math.ceil(res.report.total * 1.3) <= b.limit
    assert res.report.calibration_ratio == 1.3


def test_missing_results_and_orphans_are_repaired() -> None:
    log = Log()
    log.user("Start.")
    log.assistant("Calling two tools.", [("read_file", {"path": "a"}), ("read_file", {"path": "b"})])
    log.tool("call_1", "read_file", "content a")  # call_2 never got a result (cancelled)
    log.user("Go on.")
    log.tool("call_99", "grep", "stray result")  # its call is not in view
    res = run(log)
    msgs = res.request.messages
    assert msgs[2].role == "tool" and msgs[2].tool_call_id == "call_1"
    assert msgs[3].role == "tool" and msgs[3].tool_call_id == "call_2" and msgs[3].is_error and msgs[3].event_id is None
    stray = next(m for m in msgs if "stray result" in m.content)
    assert stray.role == "user" and "call_99" in stray.content


def test_empty_assistant_messages_are_skipped() -> None:
    log = Log()
    log.user("Hi")
    log.assistant("")
    log.user("Hello?")
    assert [m.role for m in run(log).request.messages] == ["user", "user"]


class FakeMemory:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str], int, int]] = []

    def warm_block(self, query, files, turn, max_tokens, counter):  # noqa: ANN001
        self.calls.append((query, files, turn, max_tokens))
        return "<context-memory>\n- [turn 2] decision: use PostgreSQL\n</context-memory>"


def test_warm_provider_and_override() -> None:
    log = small_log()
    mem = FakeMemory()
    res = run(log, warm=mem)
    assert "PostgreSQL" in res.warm_text
    query, files, turn, max_tokens = mem.calls[0]
    assert query == "Thanks. Now run the tests." and "app.py" in files and turn == 2
    warm_share = Budget(32_000).base("warm")  # the ledger's block first, then up to 30 % for recall
    assert max_tokens == min(int(warm_share * 0.3), warm_share - counter().count(res.warm_text.split("\n<context-memory>")[0]))
    over = run(log, warm=mem, warm_override="exact warm text")
    assert over.warm_text == "exact warm text" and len(mem.calls) == 1

    class Broken:
        def warm_block(self, *a, **k):  # noqa: ANN002, ANN003
            raise RuntimeError("db locked")

    res = run(log, warm=Broken())
    assert "Files changed this session: app.py" in res.warm_text and any("memory recall failed" in n for n in res.report.notes)


def test_recalled_memory_does_not_repeat_a_pin_the_request_shows() -> None:
    class StoreWithThisSession:  # the store holds this session's pins too (memory ingest)
        def warm_block(self, query, files, turn, max_tokens, counter):  # noqa: ANN001
            return "<context-memory>\n- [constraint t1] Never modify config files.\n- [decision t0] use PostgreSQL\n</context-memory>"

    res = run(small_log(), warm=StoreWithThisSession())
    assert "Never modify config files" not in res.warm_text and "use PostgreSQL" in res.warm_text



def test_full_and_window_baselines() -> None:
    log = noisy_session(20)
    full = run(log, strategy="full", window=16_000, max_output=2048)
    assert full.report.total > 16_000 and full.report.strategy == "full" and full.warm_text == ""
    assert any("over the limit" in n for n in full.report.notes) and not full.report.system_in_window
    assert full.report.advice == "new_session"
    win = run(log, strategy="window", window=16_000, max_output=2048)
    hist = sum(1 for m in win.request.messages)
    assert win.report.strategy == "window" and hist < len(full.request.messages)
    assert win.request.messages[0].role == "user"
    kept_users = [m for m in win.request.messages if m.role == "user"]
    assert len(kept_users) >= 3
    history = sum(count_message(m, counter()) for m in win.request.messages)
    assert history <= 0.6 * 16_000 or len(kept_users) == 3
    with pytest.raises(ValueError):
        run(log, strategy="bogus")


def test_window_caps_single_messages() -> None:
    log = Log()
    log.user("go")
    log.step("read_file", {"path": "big"}, numbered_lines(3000))
    res = run(log, strategy="window", window=200_000, max_output=4096)
    tool = next(m for m in res.request.messages if m.role == "tool")
    assert counter().count(tool.content) <= 4100 and res.pruned_ids


class CountingCounter:
    name = "counting"

    def __init__(self) -> None:
        self.inner = get_counter("o200k_base")
        self.chars = 0

    def count(self, text: str) -> int:
        self.chars += len(text)
        return self.inner.count(text)


def test_remeasuring_costs_only_new_content() -> None:
    log = noisy_session(6)
    raw = CountingCounter()
    cached = CachedCounter(raw)
    build(inputs(log, c=cached))
    first = raw.chars
    log.step("read_file", {"path": "new.py"}, "print('new')")
    build(inputs(log, c=cached))
    assert raw.chars - first < 2_000  # the second build tokenized only the new step (and small derived texts)


def test_view_is_applied_rewind_hides_later_events() -> None:
    log = small_log()
    log.user("A mistaken request to drop the database.")
    log.add("rewind", to_id=8)
    res = run(log)
    assert all("drop the database" not in m.content for m in res.request.messages)
    assert len(view(log.events)) == 7


def test_build_inputs_signature_defaults() -> None:
    b = BuildInputs(events=[Event(0, "user", {"text": "hi", "turn": 1})], system="s", tools=[], budget=Budget(8000, max_output=1000),
                    counter=counter(), step=1, turn=1)
    assert (b.strategy, b.calibration_ratio, b.allow_compaction, b.protect_turns, b.thresholds) == ("ctxagent", 1.0, True, 2, (0.75, 0.90))
    assert build(b).request.messages[0].content == "hi"


def long_single_turn(steps: int) -> Log:
    log = Log()
    log.user("Never touch the config files. Port every module.")
    for i in range(steps):
        log.step("read_file", {"path": f"m{i}.py"}, numbered_lines(60, f"m{i}"), text=f"Step {i}: reading module {i} " + "并检查 " * 30)
    return log


def _append_all(log: Log, records: list[PlannedCompaction]) -> None:
    for rec in records:
        assert rec.event_id == len(log.events)  # the id the build planned is the one the log gives
        log.add("compaction", **rec.data.to_data())


def test_one_long_turn_compacts_its_own_older_steps() -> None:
    log = long_single_turn(120)
    res = run(log, window=12_000, max_output=1024)
    assert res.compaction is not None and [p.data for p in res.compactions] == [res.compaction]
    first_user = next(e.id for e in log.events if e.kind == "user")
    assert res.compaction.first_id == first_user + 1  # the newest user message stays visible
    msgs = res.request.messages
    assert msgs[0].event_id == first_user and msgs[1].kind == "summary"
    assert sum(1 for m in msgs if m.role == "assistant") == 2  # the last steps verbatim
    _append_all(log, res.compactions)
    again = run(log, window=12_000, max_output=1024)
    assert again.compactions == [] and request_sha256(again.request.to_dict()) == request_sha256(res.request.to_dict())


def test_old_turns_and_current_turn_compacted_in_one_build() -> None:
    log = noisy_session(20, lines=40)
    log.user("Now the big one.")
    for i in range(100):
        log.step("read_file", {"path": f"x{i}.py"}, numbered_lines(30, f"x{i}"), text=f"Step {i} " + "检查 " * 30)
    res = run(log, window=12_000, max_output=1024)
    assert len(res.compactions) == 2 and res.compaction == res.compactions[0].data
    old, in_turn = (p.data for p in res.compactions)
    newest_user = max(e.id for e in log.events if e.kind == "user")
    assert old.last_id < newest_user < in_turn.first_id
    assert any("also compacted" in n for n in res.report.notes)
    _append_all(log, res.compactions)
    again = run(log, window=12_000, max_output=1024)
    assert again.compactions == [] and request_sha256(again.request.to_dict()) == request_sha256(res.request.to_dict())


def test_summary_is_capped_to_a_share_of_the_limit() -> None:
    log = Log()
    for t in range(60):
        log.user(f"Never use library{t} in module {t}. We'll use approach {t} for part {t}. TODO: verify part {t} later " + "x" * 200)
        log.step("edit_file", {"path": f"src/very/long/path/module_{t}.py"}, "ok", meta={"files": [f"src/very/long/path/module_{t}.py"]})
    log.user("What now?")
    res = run(log, window=7_000, max_output=1024)
    assert res.compaction is not None
    limit = Budget(7_000, max_output=1024).limit
    assert counter().count(res.compaction.summary) <= limit // 4
    assert res.report.total <= limit
