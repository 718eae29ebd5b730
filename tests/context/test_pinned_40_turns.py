"""A constraint from turn 1 is in every build of a 40-turn noisy session — English and Chinese: in its
own message while that is shown, then in the working-memory block (and only there: never twice)."""

from __future__ import annotations

import pytest
from ctx_helpers import Log, counter, inputs, numbered_lines
from ctxagent.context.budget import Budget
from ctxagent.context.builder.dispatch import build
from ctxagent.context.history import Event


@pytest.mark.parametrize(
    ("constraint", "family"),
    [("Don't modify config files.", "o200k_base"), ("不要修改配置文件。", "o200k_base"), ("不要修改配置文件。", "heuristic")],
)
def test_pinned_constraint_in_every_build(constraint: str, family: str) -> None:
    log = Log()
    log.user(f"{constraint} Please refactor the storage layer.")
    budget = Budget(16_000, max_output=2048)
    c = counter(family)
    compactions = pruned = recalled = 0
    step = 0
    for turn in range(1, 41):
        if turn > 1:
            log.user(f"第{turn}轮：继续下一个模块。Turn {turn}: continue with module {turn}.")
        for k in range(3):
            step += 1
            log.step("read_file", {"path": f"src/m{turn}_{k}.py"}, numbered_lines(120 + 40 * k, f"m{turn}"), text="Looking.")
            res = build(inputs(log, budget=budget, c=c, step=step, turn=turn))
            first_shown = any(m.event_id == 0 and m.kind == "message" for m in res.request.messages)
            if first_shown:  # its own message holds it: the block does not repeat it
                assert constraint not in res.warm_text
            else:
                assert constraint in res.warm_text, f"constraint missing at turn {turn} step {step}"
                warm = next(m for m in res.request.messages if m.kind == "warm")
                assert warm.content == res.warm_text and "[turn 1]" in warm.content
                assert res.report.used["warm"] > 0  # counted
                recalled += 1
            assert res.report.total <= budget.limit
            pruned += res.report.pruned > 0
            if res.compaction:
                compactions += 1
                log.add("compaction", **res.compaction.to_data())
        log.assistant(f"Module {turn} done.")
    assert compactions >= 1 and pruned >= 1 and recalled >= 1  # the session really was under pressure
    # and the constraint text is counted: the same session without it has a smaller warm slice
    assert counter(family).count(constraint) > 0
    assert any(e.kind == "compaction" for e in log.events)
    assert isinstance(log.events[0], Event)


def test_session_pins_sources_dedupe_and_rewind() -> None:
    from ctxagent.context.ledger import Ledger
    from ctxagent.context.pins import collect_pins, live_events

    log = Log()
    log.user("Always write tests first. TODO: migrate the users table")
    log.user("always write tests first.")  # a repeat keeps the earliest turn
    log.add("memory", op="remember", type="constraint", text="Use tabs, not spaces", turn=2)
    log.add("memory", op="store", type="note", text="not a constraint")
    log.add("compaction", first_id=0, last_id=0, summary="Decisions:\n- none\nConstraints:\n- none\nChanges:\n- none\nOpen tasks:\n- ship v2")
    wrong = log.user("Never deploy on Fridays.")
    pins = collect_pins(log.events)
    texts = [(p.kind, p.text, p.turn) for p in pins]
    assert ("constraint", "Always write tests first.", 1) in texts
    assert sum(1 for k, t, _ in texts if t.lower().startswith("always write")) == 1
    assert ("constraint", "Use tabs, not spaces", 2) in texts
    assert ("task", "migrate the users table", 1) in texts and ("task", "ship v2", 2) in texts
    assert all("not a constraint" not in t for _, t, _ in texts)
    assert any("Fridays" in t for _, t, _ in texts)
    log.add("rewind", to_id=wrong.id)  # a rewound message un-pins what it said
    assert all("Fridays" not in p.text for p in collect_pins(log.events))
    # without a memory store the builder's warm block is the session ledger's: the pins are its floor
    built = build(inputs(log))
    block = built.warm_text
    assert block.startswith("<context-memory>") and "The user's constraints (binding):" in block
    assert "Open tasks a summary listed" in block
    assert "[turn 1] Always write tests first." in block and "Use tabs, not spaces" in block
    assert "ship v2" in block and "Fridays" not in block
    # the user's own task line: its message is masked, so the summary quotes it word for word (the task
    # state, context/builder/task_state.py) and the warm block does not repeat it
    summary = next(m.content for m in built.request.messages if m.kind == "summary")
    assert "Always write tests first. TODO: migrate the users table" in summary and "migrate the users" not in block
    ledger = Ledger().feed(live_events(log.events))  # what the builder folds, in a warm slice too small for it all
    whole = counter().count(ledger.tail_block(10_000, counter()))
    short = ledger.tail_block(whole - 1, counter())
    assert counter().count(short) < whole and "older items omitted for space" in short  # never silently
    assert "Always write tests first." in short  # the oldest tasks go first, constraints last
