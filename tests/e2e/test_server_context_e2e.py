"""The providers' own context management end to end: the agent loop, the real `anthropic` SDK, and the
loopback scripted server emulating `clear_tool_uses_20250919`, `compact_20260112` and `count_tokens`.

What must hold: the request carries the edits and the beta header; the server's report is logged on
the assistant event exactly as the server made it; the gauge shows what the model saw, not what was
sent; the calibrator learns from the prompt as sent; a compaction block goes back verbatim (the
server refuses an altered one) and the history shrinks to it; `inspect` still rebuilds every step
byte for byte; a resumed session shows the same figures.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ctxagent.agent.config import Config
from ctxagent.agent.loop import Agent, AgentParts
from ctxagent.agent.providers.anthropic import AnthropicProvider
from ctxagent.agent.session import open_session
from ctxagent.agent.updates import AgentEvent, CompactionDone, ContextBuilt
from ctxagent.context.budget import Budget
from ctxagent.context.builder.dispatch import request_sha256
from ctxagent.context.builder.rebuild import rebuild_step
from ctxagent.context.calibrator import Calibrator
from ctxagent.context.server_edits import CLEARED
from ctxagent.context.spill import SpillStore
from ctxagent.context.tokens import CachedCounter, get_counter
from ctxagent.tools import make_registry
from ctxagent.tools.contract import FunctionTool, ToolArgs, ToolResult
from ctxagent.tui.cli.inspect import wire_body
from ctxagent.tui.lab.scripted.context_emulation import signature_of
from ctxagent.tui.lab.scripted.server import ScriptedServer

WINDOW = 8000  # both triggers scale to 0.75 W = 6000 (server tokens)
MODEL = "claude-sonnet-5-5"
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


class PageArgs(ToolArgs):
    n: int


def _page_tool() -> FunctionTool[PageArgs]:
    def run(args: PageArgs, ctx: Any) -> ToolResult:
        body = " ".join(WORDS[(args.n + i) % len(WORDS)] for i in range(260))
        return ToolResult(f"page {args.n} (第{args.n}页): {body}")

    return FunctionTool("page", "read page n of the manual", PageArgs, "read", run)


def _script(steps: int) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [{"text": f"Reading page {i}.", "tool_calls": [{"name": "page", "arguments": {"n": i}}]}
                                   for i in range(steps)]
    return [*turns, {"text": "I read the manual."}]


@pytest.fixture
def server_agent(work_repo: Path) -> Iterator[Callable[..., tuple[Agent, list[AgentEvent], ScriptedServer]]]:
    made: list[tuple[Agent, ScriptedServer]] = []

    def make(script: list[dict[str, Any]], strategy: str, *, streaming: bool = True,
             session_id: str | None = None, server: ScriptedServer | None = None) -> tuple[Agent, list[AgentEvent], ScriptedServer]:
        srv = server or ScriptedServer(script)
        if server is None:
            srv.start()
        cfg = Config(model=f"anthropic:{MODEL}", permission_mode="yolo", memory=False, strategy=strategy)  # type: ignore[arg-type]
        session = open_session(work_repo, cfg, resume=session_id) if session_id else open_session(work_repo, cfg)
        parts = AgentParts(
            provider=AnthropicProvider(MODEL, api_key="sk-ant-test-0000000000000000", base_url=srv.base_url,
                                       streaming=streaming),
            registry=make_registry(extra=[_page_tool()]),
            counter=CachedCounter(get_counter("o200k_base")),
            budget=Budget(WINDOW, max_output=1024),
            calibrator=Calibrator(f"anthropic:{MODEL}"),
            spill=SpillStore(work_repo / ".ctxagent" / "spill"),
            system="You are a test agent.",
            model_label=f"anthropic:{MODEL}",
        )
        events: list[AgentEvent] = []
        agent = Agent(session, parts, on_event=events.append)
        made.append((agent, srv))
        return agent, events, srv

    yield make
    for agent, srv in made:
        agent.session.log.close()
        srv.stop()


def _assistants(agent: Agent) -> list[Any]:
    return [e.assistant for e in agent.log.events if e.kind == "assistant"]


def _check_inspect(agent: Agent, srv: ScriptedServer) -> None:
    """Every step rebuilds from the log alone to the body the server received."""
    events = list(agent.log.events)
    bodies = [r["body"] for r in srv.requests]
    assert len(bodies) == agent.step
    for step in range(1, agent.step + 1):
        rebuilt = rebuild_step(events, step, wire_body)
        assert rebuilt.verified, f"step {step} does not rebuild"
        assert request_sha256(rebuilt.body) == request_sha256(bodies[step - 1])


@pytest.mark.parametrize("streaming", [True, False])
def test_clear_tool_uses_end_to_end(server_agent, streaming: bool) -> None:
    agent, events, srv = server_agent(_script(14), "anthropic-clear", streaming=streaming)
    done = agent.run_turn("read the manual, page by page")
    assert done.stop_reason == "end_turn"

    requests = srv.requests
    for r in requests:  # every request asked for the edit, on the beta endpoint with its header
        edit = r["body"]["context_management"]["edits"][0]
        assert edit == {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 6000},
                        "keep": {"type": "tool_uses", "value": 3}}
        assert "context-management-2025-06-27" in r["beta"]
    edited = [i for i, r in enumerate(requests) if r["server"]["applied_edits"]]
    assert len(edited) >= 3, "the history never passed the trigger: the test proves nothing"
    assert all(requests[i]["server"]["original_tokens"] > 6000 for i in edited)
    assert all(requests[i]["server"]["original_tokens"] <= 6000 for i in range(len(requests)) if i not in edited)

    # what the model saw: the results of all but the last 3 tool uses cleared
    seen = requests[edited[-1]]["server"]["seen"]["messages"]
    results = [b for m in seen for b in m["content"] if b["type"] == "tool_result"]
    assert [b["content"] for b in results[:-3]] == [CLEARED] * (len(results) - 3)
    assert all(b["content"] != CLEARED and b["content"].startswith("page") for b in results[-3:])

    # the log holds the server's report as the server made it, step by step
    steps = _assistants(agent)
    assert len(steps) == len(requests)
    for a, r in zip(steps, requests, strict=True):
        assert a.server is not None and a.server.strategy == "anthropic-clear"
        assert [e.model_dump(exclude_defaults=True) for e in a.server.applied_edits] == r["server"]["applied_edits"]
        assert a.server.seen_tokens == r["server"]["seen_tokens"]
        assert a.usage.input_tokens == r["server"]["seen_tokens"]

    # the gauge shows what the model saw on the edited steps (the logged pre-send report does not)
    for i in edited:
        report = agent.reports[i]
        assert report.calibrated_total == requests[i]["server"]["seen_tokens"]
        assert report.calibrated_total < requests[i]["server"]["original_tokens"]
        assert any("clear_tool_uses_20250919: cleared" in n for n in report.notes)
        shown = [e.report for e in events if isinstance(e, ContextBuilt) and e.step == i + 1]
        assert shown[-1].calibrated_total == report.calibrated_total

    # count_tokens was asked before the edited steps, with the edits and the beta header
    assert srv.count_requests, "count_tokens was never asked past the trigger"
    assert all("context_management" in c and "context-management-2025-06-27" in c["_beta"] for c in srv.count_requests)

    # the calibrator learned from the prompt as sent, not from the cleared one
    ratios = [requests[i]["server"]["original_tokens"] / json.loads(json.dumps(agent.reports[i].total)) for i in edited]
    assert agent.parts.calibrator.ratio >= 0.9 * min(ratios)
    seen_ratio = requests[edited[-1]]["server"]["seen_tokens"] / agent.reports[edited[-1]].total
    assert agent.parts.calibrator.ratio > seen_ratio

    # every request fits the window, and inspect rebuilds each one exactly
    assert all(r.total + r.used["reserve"] <= WINDOW for r in agent.reports)
    if streaming:  # the product streams; inspect rebuilds the streamed body
        _check_inspect(agent, srv)


def test_a_resumed_session_shows_what_the_model_saw(server_agent, work_repo: Path) -> None:
    agent, _, srv = server_agent(_script(14), "anthropic-clear")
    agent.run_turn("read the manual")
    before = [(r.step, r.calibrated_total, r.usage_pct) for r in agent.reports]
    session_id = agent.session.id
    agent.session.log.close()
    again, _, _ = server_agent([], "anthropic-clear", session_id=session_id, server=srv)
    assert [(r.step, r.calibrated_total, r.usage_pct) for r in again.reports] == before


@pytest.mark.parametrize("streaming", [True, False])
def test_server_compaction_end_to_end(server_agent, streaming: bool) -> None:
    agent, events, srv = server_agent(_script(16), "anthropic-compact", streaming=streaming)
    done = agent.run_turn("read the manual, page by page")
    assert done.stop_reason == "end_turn", [getattr(e, "message", "") for e in events]

    requests = srv.requests
    assert all(r["body"]["context_management"]["edits"] == [{"type": "compact_20260112",
                                                             "trigger": {"type": "input_tokens", "value": 6000}}]
               for r in requests)
    assert all("compact-2026-01-12" in r["beta"] for r in requests)
    compacted = [i for i, r in enumerate(requests) if r["server"]["compacted"]]
    assert compacted, "the history never passed the trigger: the test proves nothing"
    first = compacted[0]

    # the compaction is an event masking everything that request showed, with the block as returned
    comps = [e for e in agent.log.events if e.kind == "compaction"]
    assert comps and all(c.compaction.method == "server" for c in comps)
    block = comps[0].compaction.server_block
    assert block is not None and block["type"] == "compaction"
    assert block["signature"] == signature_of(block["content"]) and block["content"] == comps[0].compaction.summary
    assert any(isinstance(e, CompactionDone) and e.method == "server" for e in events)
    assistant_after = next(e for e in agent.log.events if e.kind == "assistant" and e.id > comps[0].id)
    assert assistant_after.assistant.server.compacted
    assert assistant_after.assistant.server.compaction_usage.input_tokens > 6000

    # the next request starts with the block, verbatim, and is far smaller than the one compacted
    nxt = requests[first + 1]["body"]["messages"]
    assert nxt[0]["role"] == "assistant"
    sent = {k: v for k, v in nxt[0]["content"][0].items() if k != "cache_control"}
    assert sent == block
    assert requests[first + 1]["server"]["original_tokens"] < requests[first]["server"]["original_tokens"] // 2
    # what the model saw on the compacting step is the summary, and the gauge says so
    assert agent.reports[first].calibrated_total == requests[first]["server"]["seen_tokens"] < 6000

    assert all(r.total + r.used["reserve"] <= WINDOW for r in agent.reports)
    if streaming:  # the product streams; inspect rebuilds the streamed body
        _check_inspect(agent, srv)


def test_an_altered_compaction_block_is_refused(server_agent) -> None:
    """The emulation checks what the service checks: a block not sent back as returned is an error."""
    from ctxagent.agent.providers.anthropic import AnthropicProvider as Provider
    from ctxagent.context.errors import BadRequestError
    from ctxagent.context.request import Message, Request
    from ctxagent.context.server_edits import server_edits_for

    with ScriptedServer([{"text": "ok"}]) as srv:
        provider = Provider(MODEL, api_key="sk-ant-test-0000000000000000", base_url=srv.base_url)
        block = {"type": "compaction", "content": "the summary", "signature": signature_of("the summary (edited)")}
        req = Request("sys", [Message("assistant", "the summary", kind="server_compaction", block=block),
                              Message("user", "go on")], [], server_edits=server_edits_for("anthropic-compact", WINDOW))
        with pytest.raises(BadRequestError, match="compaction block was altered"):
            list(provider.stream(req))


def test_the_console_script_runs_anthropic_clear(repo: Path, scripted_server, ctxagent_run, read_session) -> None:
    """`ctxagent -p --strategy anthropic-clear` through the real console script and a server subprocess."""
    names = []
    for k in range(24):
        name = f"chapter_{k:02d}.txt"
        (repo / name).write_text(" ".join(WORDS[(k + i) % len(WORDS)] for i in range(240)) + f"\n章节 {k}\n")
        names.append(name)
    script = [{"text": f"Reading {n}.", "tool_calls": [{"name": "read_file", "arguments": {"path": n}}]} for n in names]
    srv = scripted_server([*script, {"text": "Read them all."}])
    out = ctxagent_run(repo, "-p", "read every chapter", "--model", f"anthropic:{MODEL}", "--base-url", srv.url,
                       "--window", "12000", "--strategy", "anthropic-clear", "--yes", "--output", "json")
    assert out.returncode == 0, out.stderr
    session = json.loads(out.stdout)["session"]
    events = read_session(repo, session)
    requests = srv.requests()
    assert len(requests) == len(script) + 1
    assert all(r["body"]["context_management"]["edits"][0]["trigger"]["value"] == 9000 for r in requests)
    edited = [r for r in requests if r["server"]["applied_edits"]]
    assert edited, "the history never passed the trigger: the test proves nothing"
    steps = [e["data"] for e in events if e["kind"] == "assistant"]
    assert [s["server"].get("applied_edits", []) for s in steps] == [r["server"]["applied_edits"] for r in requests]
    assert [s["server"]["seen_tokens"] for s in steps] == [r["server"]["seen_tokens"] for r in requests]
    reports = [e["data"] for e in events if e["kind"] == "context_report"]
    assert all(r["report"]["strategy"] == "anthropic-clear" and r["build"]["strategy"] == "anthropic-clear" for r in reports)
    # inspect rebuilds the last step, context_management included, to the body the server received
    shown = ctxagent_run(repo, "inspect", session, "--step", str(len(reports)), "--json")
    assert shown.returncode == 0, shown.stdout + shown.stderr  # exit 1: the rebuilt request differs
    assert json.loads(shown.stdout)["request"] == requests[-1]["body"]
