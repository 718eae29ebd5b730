"""A provider's "prompt is too long": the step is rebuilt through the builder's own relief, logged like
any step, and retried once; what a turn ends on reaches TurnFinished."""

from __future__ import annotations

from ctxagent.agent.updates import CompactionDone, Notice
from ctxagent.context.builder.rebuild import rebuild_step
from ctxagent.context.history import Event, view

BIG = "\n".join(f"row {i}: the parser keeps line {i} of the report as it was written" for i in range(300))


def test_a_refused_prompt_is_relieved_by_the_builder_and_retried_once(make_agent, echo) -> None:
    script = [
        {"text": "reading", "tool_calls": [{"name": "echo", "arguments": {"text": BIG}}]},
        {"text": "turn one done"},
        {"fault": "context_length"},
        {"text": "answered after relief"},
    ]
    agent, events, provider = make_agent(script, extra_tools=[echo()])
    agent.run_turn("first")
    done = agent.run_turn("second")
    assert done.stop_reason == "end_turn" and done.text == "answered after relief" and done.error == ""
    log = agent.session.log
    refused, retried = (e.context_report for e in log.of_kind("context_report")[-2:])
    assert retried.step == refused.step + 1 == agent.step
    # learned from the refusal: the provider counts more than the estimate, so the retry is smaller
    assert retried.calibration_ratio > refused.calibration_ratio
    assert retried.report["total"] * 1.05 < refused.report["total"]
    # the builder's own compaction did it, logged and shown like any (the originals stay in the log)
    (compaction,) = log.of_kind("compaction")
    assert compaction.id < log.of_kind("context_report")[-1].id
    assert [e for e in events if isinstance(e, CompactionDone)]
    assert not any(isinstance(it, Event) and it.id == compaction.compaction.first_id for it in view(log.events))
    assert any(isinstance(e, Notice) and "too long" in e.message and e.level == "warning" for e in events)
    # both requests rebuild from the log alone, byte for byte
    for step in (refused.step, retried.step):
        assert rebuild_step(log.events, step, lambda _model, request: provider.body(request)).verified


def test_a_second_refusal_ends_the_turn_with_the_providers_error(make_agent, echo) -> None:
    script = [
        {"text": "reading", "tool_calls": [{"name": "echo", "arguments": {"text": BIG}}]},
        {"text": "turn one done"},
        {"fault": "context_length"},
        {"fault": "context_length"},
        {"text": "next turn"},
    ]
    agent, events, _ = make_agent(script, extra_tools=[echo()])
    agent.run_turn("first")
    done = agent.run_turn("second")
    assert done.stop_reason == "error" and done.error_type == "ContextLengthError"
    assert "too long" in done.error
    errors = [e for e in events if isinstance(e, Notice) and e.level == "error"]
    assert [e.message for e in errors] == [done.error]  # said once
    assert agent.run_turn("third").text == "next turn"  # the session goes on


def test_a_refusal_with_nothing_to_relieve_is_not_sent_again(make_agent) -> None:
    agent, _, provider = make_agent([{"fault": "context_length"}, {"text": "never"}])
    done = agent.run_turn("hi")
    assert done.stop_reason == "error" and done.error_type == "ContextLengthError"
    assert "does not make it fit" in done.error
    assert provider.served == 1  # the one refused request: the retry could not be made to fit
    assert len(agent.session.log.of_kind("context_report")) == 1


def test_turn_finished_says_why_the_turn_ended(make_agent) -> None:
    agent, _, _ = make_agent([{"fault": "401"}, {"text": "cut short", "stop_reason": "max_tokens"}, {"text": "whole"}])
    failed = agent.run_turn("one")
    assert (failed.stop_reason, failed.error_type) == ("error", "AuthError") and "authentication" in failed.error
    cut = agent.run_turn("two")
    assert (cut.stop_reason, cut.error_type, cut.text) == ("max_tokens", "", "cut short")
    assert agent.run_turn("three").stop_reason == "end_turn"
