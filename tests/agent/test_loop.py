"""The agent loop with the in-process scripted model: steps, tools, permissions, faults, cancel."""

from __future__ import annotations

import threading

from ctxagent.agent.updates import (
    AssistantDelta,
    ContextBuilt,
    Notice,
    PermissionDecision,
    StepStarted,
    ToolFinished,
    TurnFinished,
)
from ctxagent.context.history import view


def test_context_is_built_before_every_step_and_steps_count_across_turns(make_agent, echo) -> None:
    agent, events, provider = make_agent(
        [
            {"text": "one", "tool_calls": [{"name": "echo", "arguments": {"text": "a"}}]},
            {"text": "two", "tool_calls": [{"name": "echo", "arguments": {"text": "b"}}, {"name": "echo", "arguments": {"text": "c"}}]},
            {"text": "done"},
            {"text": "second turn"},
        ],
        extra_tools=[echo()],
    )
    done = agent.run_turn("go")
    assert done.stop_reason == "end_turn" and done.steps == 3 and done.text == "done"
    built = [e for e in events if isinstance(e, ContextBuilt)]
    assert [b.step for b in built] == [1, 2, 3]
    assert [e.step for e in events if isinstance(e, StepStarted)] == [1, 2, 3]
    assert "".join(e.text for e in events if isinstance(e, AssistantDelta)) == "onetwodone"
    agent.run_turn("again")
    reports = agent.session.log.of_kind("context_report")
    assert [r.data["step"] for r in reports] == [1, 2, 3, 4]
    # each report precedes its model call in the log
    kinds = [e.kind for e in agent.session.log.events if e.kind in ("context_report", "assistant")]
    assert kinds == ["context_report", "assistant"] * 4
    # the third request carries all three tool results, answered in order
    third = provider.requests[2] if provider.requests else None
    if third is not None:
        tool_msgs = [m for m in third["messages"] if m["role"] == "tool"]
        assert [m["content"] for m in tool_msgs] == ["echo: a", "echo: b", "echo: c"]


def test_bad_tool_calls_become_tool_errors_and_the_loop_goes_on(make_agent, echo) -> None:
    agent, events, _ = make_agent(
        [
            {"tool_calls": [{"name": "nope", "arguments": {}}]},
            {"tool_calls": [{"name": "echo", "arguments": {"text": 5}}]},
            {"tool_calls": [{"name": "echo", "raw_arguments": "{not json"}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "../../etc/passwd"}}]},
            {"text": "recovered"},
        ],
        extra_tools=[echo()],
    )
    done = agent.run_turn("try things")
    assert done.stop_reason == "end_turn" and done.text == "recovered"
    results = [e for e in events if isinstance(e, ToolFinished)]
    assert len(results) == 4 and all(r.is_error for r in results)
    assert "unknown tool" in results[0].content
    assert "must be string" in results[1].content
    assert "not a valid JSON object" in results[2].content
    assert "outside" in results[3].content.lower() or "refus" in results[3].content.lower()


def test_permission_deny_with_reason_and_allow_for_session(make_agent) -> None:
    asked: list[str] = []

    def approver(req):
        asked.append(req.tool)
        if len(asked) == 1:
            return PermissionDecision(allow=False, reason="not that file")
        return PermissionDecision(allow=True, remember=True)

    agent, events, _ = make_agent(
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "1"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "2"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "3"}}]},
            {"text": "ok"},
        ],
        approver=approver,
        mode="ask",
    )
    agent.run_turn("write files")
    root = agent.session.root
    assert not (root / "a.txt").exists() and (root / "b.txt").read_text() == "3"
    assert asked == ["write_file", "write_file"]  # the third (the same path) was allowed for the session
    denied = [e for e in events if isinstance(e, ToolFinished)][0]
    assert denied.is_error and "not that file" in denied.content


def test_provider_error_ends_the_turn_cleanly_and_the_session_goes_on(make_agent) -> None:
    agent, events, _ = make_agent([{"fault": "401"}, {"text": "fine now"}])
    done = agent.run_turn("hello")
    assert done.stop_reason == "error"
    assert any(isinstance(e, Notice) and e.level == "error" for e in events)
    errors = agent.session.log.of_kind("error")
    assert errors and errors[0].data["error_type"] == "AuthError"
    assert agent.run_turn("again").text == "fine now"


def test_retryable_fault_is_retried_and_visible(make_agent) -> None:
    agent, events, _ = make_agent([{"fault": "429", "retry_after": 0}, {"text": "after retry"}])
    done = agent.run_turn("hi")
    assert done.text == "after retry" and done.stop_reason == "end_turn"
    assert any(isinstance(e, Notice) and "429" in e.message for e in events)


def test_stream_cut_keeps_partial_text_marked(make_agent) -> None:
    agent, _, _ = make_agent([{"fault": "cut", "text": "half of an ans"}, {"text": "whole"}])
    done = agent.run_turn("hi")
    assert done.stop_reason == "error"
    assistant = agent.session.log.of_kind("assistant")[-1]
    assert assistant.data["partial"] is True and assistant.data["text"] == "half of an ans"
    assert agent.run_turn("continue").text == "whole"


def test_cancel_between_steps_answers_every_call(make_agent, echo) -> None:
    cancel = threading.Event()

    def approve_and_cancel(req):
        cancel.set()
        return PermissionDecision(allow=True)

    agent, events, _ = make_agent(
        [{"tool_calls": [{"name": "shell", "arguments": {"command": "true"}}, {"name": "echo", "arguments": {"text": "x"}}]}, {"text": "never"}],
        approver=approve_and_cancel,
        mode="ask",
        extra_tools=[echo()],
    )
    done = agent.run_turn("go", cancel)
    assert done.stop_reason == "cancelled"
    assistant = agent.session.log.of_kind("assistant")[-1]
    results = agent.session.log.of_kind("tool_result")
    assert [r.data["call_id"] for r in results] == [c["id"] for c in assistant.data["tool_calls"]]
    assert "cancelled" in results[-1].data["content"]
    assert isinstance(events[-1], TurnFinished)


def test_max_steps(make_agent, echo) -> None:
    agent, _, _ = make_agent([{"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}] * 5, extra_tools=[echo()], max_steps=2)
    assert agent.run_turn("loop").stop_reason == "max_steps"


def test_overflow_is_a_clear_error_not_a_request(make_agent) -> None:
    agent, _, provider = make_agent([{"text": "never"}], window=4000)
    done = agent.run_turn("word " * 20000)
    assert done.stop_reason == "error"
    assert agent.session.log.of_kind("error")[0].data["error_type"] == "ContextOverflowError"
    assert provider.served == 0


def test_log_view_keeps_everything_in_order(make_agent, echo) -> None:
    agent, _, _ = make_agent([{"text": "a", "tool_calls": [{"name": "echo", "arguments": {"text": "1"}}]}, {"text": "b"}], extra_tools=[echo()])
    agent.run_turn("q")
    kinds = [e.kind for e in view(agent.session.log.events)]
    assert kinds == ["user", "assistant", "tool_result", "assistant"]


def test_auto_compact_after_a_turn_past_the_breakpoint(make_agent, echo) -> None:
    # long answers: the agent's own words are never cut by the tools-slice rule, so usage keeps growing
    script = [{"text": "reading", "tool_calls": [{"name": "echo", "arguments": {"text": "y" * 3000}}]},
              {"text": "noted: " + "the parser keeps state per line " * 60}] * 6
    agent, events, _ = make_agent(script, extra_tools=[echo()], window=9000)
    agent.session.config.auto_compact = True
    for i in range(6):
        agent.run_turn(f"turn {i}: never touch setup.cfg")
        if agent.session.log.of_kind("compaction"):
            break
    comps = agent.session.log.of_kind("compaction")
    assert comps, "usage crossed 75 % with auto_compact on: a compaction must follow"
    assert any(isinstance(e, Notice) and "auto_compact" in e.message for e in events)


def test_run_tests_permission_shows_the_command_it_will_run(make_agent) -> None:
    seen: list[str] = []

    def approver(req):
        seen.append(req.preview)
        return PermissionDecision(allow=False, reason="not now")

    agent, _, _ = make_agent([{"tool_calls": [{"name": "run_tests", "arguments": {}}]}, {"text": "ok"}], approver=approver, mode="ask")
    (agent.session.root / "test_x.py").write_text("def test_x():\n    assert True\n")
    agent.run_turn("run the tests")
    assert seen and "pytest" in seen[0]


def test_compact_inside_one_long_turn(make_agent, echo) -> None:
    script = [{"text": f"step {i}", "tool_calls": [{"name": "echo", "arguments": {"text": f"result {i} " * 50}}]} for i in range(5)]
    script.append({"text": "finished"})
    agent, _, _ = make_agent(script, extra_tools=[echo()])
    agent.run_turn("one long task; never touch setup.cfg")
    done = agent.compact()
    assert done is not None, "a full single-turn session must be compactable"
    items = view(agent.session.log.events)
    kinds = [getattr(it, "kind", "summary") for it in items]
    assert kinds[0] == "user" and "summary" in kinds and kinds[-1] == "assistant"
