"""The trivial baseline and the server-side context management emulations on hand-made requests and logs."""

from __future__ import annotations

from ctxagent.context.builder.render import render
from ctxagent.context.history import Event, view
from ctxagent.context.request import Message, Request, ToolCall
from ctxagent.context.server_edits import server_edits_for
from ctxagent.context.tokens import get_counter
from ctxagent.tui.lab.bench.emulations import (
    CLEARED,
    ServerParams,
    clear_tool_uses,
    last2_names,
    server_compaction,
)
from ctxagent.tui.lab.bench.presence import NAMES_KIND


def _step(i: int) -> list[Message]:
    return [Message("assistant", f"step {i}", tool_calls=[ToolCall(f"c{i}", "bash", {"command": f"cat f{i}.py"})]),
            Message("tool", f"output {i}", tool_call_id=f"c{i}", name="bash")]


def test_last2_names_keeps_two_messages_and_the_names() -> None:
    full = Request("sys", [Message("user", "go"), *_step(1), *_step(2)], [])
    req = last2_names(full, ["f1.py", "f2.py"])
    assert [m.content for m in req.messages] == ["Files seen so far: f1.py, f2.py", "step 2", "output 2"]
    assert req.messages[0].kind == NAMES_KIND and req.system == "sys"
    assert [m.content for m in last2_names(Request("s", [Message("user", "go")], []), []).messages] == ["go"]


def test_clear_tool_uses_keeps_the_last_three_results() -> None:
    full = Request("sys", [Message("user", "go"), *[m for i in range(1, 6) for m in _step(i)]], [])
    edit = ServerParams(clear_trigger=100).clear_edit(200_000)
    assert clear_tool_uses(full, edit, 100) == (full, frozenset())  # at the trigger: nothing
    req, cleared = clear_tool_uses(full, edit, 101)
    tools = [m for m in req.messages if m.role == "tool"]
    assert [m.content for m in tools] == [CLEARED, CLEARED, "output 3", "output 4", "output 5"]
    assert cleared == {"c1", "c2"}
    # tool inputs stay (clear_tool_inputs false), the original request is untouched
    assert [m.tool_calls[0].arguments for m in req.messages if m.role == "assistant"][0] == {"command": "cat f1.py"}
    assert [m.content for m in full.messages if m.role == "tool"][0] == "output 1"


def test_the_bench_uses_the_products_defaults_and_rule() -> None:
    p = ServerParams()
    for window in (32_000, 200_000, 1_000_000):
        assert (p.clear_edit(window),) == server_edits_for("anthropic-clear", window)
        assert (p.compact_edit(window),) == server_edits_for("anthropic-compact", window)
    assert p.triggers(200_000) == {"anthropic-clear": 100_000, "anthropic-compact": 150_000, "openai-compact": 150_000}
    assert p.triggers(32_000) == {"anthropic-clear": 24_000, "anthropic-compact": 24_000, "openai-compact": 24_000}
    assert p.describe(200_000)["anthropic-clear"]["keep"] == 3


def _log() -> list[Event]:
    evs: list[Event] = []

    def add(kind: str, **data: object) -> None:
        evs.append(Event(len(evs), kind, dict(data)))

    add("user", text="Fix the parser. Do not touch the tests.", turn=1)
    for i in range(1, 4):
        add("assistant", text="", tool_calls=[{"id": f"c{i}", "name": "bash", "arguments": {"command": f"cat p{i}.py"}}])
        add("tool_result", call_id=f"c{i}", name="bash", content=f"code {i}", is_error=False, meta={})
    add("user", text="Also keep the CLI stable.", turn=2)
    add("assistant", text="", tool_calls=[{"id": "c4", "name": "bash", "arguments": {"command": "pytest"}}])
    add("tool_result", call_id="c4", name="bash", content="1 passed", is_error=False, meta={})
    return evs


def test_server_compaction_covers_everything_the_request_showed() -> None:
    evs = _log()
    record = server_compaction(evs, keep_users=False)
    assert record is not None and record["first_id"] == 0 and record["last_id"] == 9
    assert record["method"] == "server" and "Do not touch the tests" in record["summary"]
    assert record["server_block"] == {"type": "compaction", "content": record["summary"]}
    evs.append(Event(len(evs), "compaction", record))
    assert len(view(evs)) == 1  # the summary alone, as the product's server compaction leaves it
    # rendered as the product renders the provider's block: an assistant message, verbatim
    msgs = [s.msg for s in render(view(evs), get_counter("o200k_base"))]
    assert [(m.role, m.kind, m.content) for m in msgs] == [("assistant", "server_compaction", record["summary"])]


def test_openai_compaction_carries_every_user_message() -> None:
    record = server_compaction(_log(), keep_users=True)
    assert record is not None
    assert record["summary"].startswith("User messages (kept verbatim):\nFix the parser. Do not touch the tests.\n\n"
                                        "Also keep the CLI stable.")
