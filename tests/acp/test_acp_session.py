"""A whole ACP session: the SDK's client drives the real `ctxagent acp` process against the scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, text_block
from acp.schema import ClientCapabilities, Implementation

from .conftest import MODEL, RecordingClient, acp_agent, run, session_events

FIX = [
    {"text": "Let me read it.", "tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
    {"tool_calls": [{"name": "edit_file", "arguments": {"path": "calc.py", "old_text": "return a - b", "new_text": "return a + b"}}]},
    {"text": "Fixed `add`: it subtracted."},
    {"text": "I will check.", "tool_calls": [{"name": "shell", "arguments": {"command": "echo checked"}}]},
    {"text": "You refused the command, so I did not run it."},
]


def _costs(events: list[dict[str, Any]]) -> float:
    """The session's cost from the log, at the registry's prices (per call, as the app's status line sums it)."""
    from ctxagent.agent import cost_usd, model_info, parse_model_name
    from ctxagent.context.request import Usage

    provider, model = parse_model_name(MODEL)
    info = model_info(provider, model)
    return sum(cost_usd(info, Usage(**e["data"]["usage"])) for e in events
               if e["kind"] == "assistant" and not e["data"].get("direct"))


def test_whole_session_prompt_tools_permissions_usage_plan_commands_load(repo: Path, scripted_server) -> None:
    srv = scripted_server(FIX)
    client = RecordingClient(answers=["allow_once", "reject"])
    (repo / "pkg" / "sub").mkdir(parents=True)  # the editor's cwd: a folder inside the repository

    async def main() -> tuple[Any, str, Any, list[Any]]:
        async with acp_agent(client, repo, srv.url) as (conn, _proc):
            init = await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(),
                                         client_info=Implementation(name="test", version="0"))
            new = await conn.new_session(cwd=str(repo / "pkg" / "sub"), mcp_servers=[])
            first = await conn.prompt(session_id=new.session_id, prompt=[text_block("fix add()\n- [ ] update the README")])
            second = await conn.prompt(session_id=new.session_id, prompt=[text_block("now check it")])
            ctx = await conn.prompt(session_id=new.session_id, prompt=[text_block("/context")])
            return init, new.session_id, (first, second, ctx), []

    init, sid, (first, second, ctx), _ = run(main())
    caps = init.agent_capabilities
    assert init.protocol_version == PROTOCOL_VERSION and caps.load_session is True
    assert caps.prompt_capabilities.embedded_context is True and caps.prompt_capabilities.image is True
    assert init.agent_info.name == "ctxagent"
    assert (first.stop_reason, second.stop_reason, ctx.stop_reason) == ("end_turn", "end_turn", "end_turn")

    # the edit went through the approver (allowed), the command was refused, on disk and in the log
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    (edit_call, edit_options), (shell_call, _) = client.permissions
    assert edit_call.kind == "edit" and edit_call.content[0].type == "diff"
    assert edit_call.content[0].old_text == "return a - b" and edit_call.content[0].new_text == "return a + b"
    assert [o.kind for o in edit_options] == ["allow_once", "allow_always", "reject_once"]
    assert shell_call.kind == "execute" and "echo checked" in shell_call.content[0].content.text
    events = session_events(repo, sid)  # the session belongs to the repository root, not the cwd
    assert events[0]["data"]["cwd"] == str(repo)
    shell_result = next(e for e in events if e["kind"] == "tool_result" and e["data"]["name"] == "shell")
    assert shell_result["data"]["is_error"] and "rejected it in the editor" in shell_result["data"]["content"]

    # streamed reply, tool calls with kinds, statuses, locations and the edit's diff
    text = client.text()
    assert "Let me read it." in text and "Fixed `add`: it subtracted." in text and "You refused the command" in text
    starts = {u.tool_call_id: u for u in client.of("tool_call")}
    done = {u.tool_call_id: u for u in client.of("tool_call_update")}
    kinds = {u.title.split()[0].rstrip(":"): u.kind for u in starts.values()}
    assert kinds == {"read_file": "read", "edit_file": "edit", "shell": "execute"}
    read_id = next(i for i, u in starts.items() if u.kind == "read")
    assert done[read_id].status == "completed" and done[read_id].locations[0].path == str(repo / "calc.py")
    assert "return a - b" in done[read_id].content[0].content.text
    edit_id = next(i for i, u in starts.items() if u.kind == "edit")
    diff = done[edit_id].content[0]
    assert diff.type == "diff" and diff.path == str(repo / "calc.py")
    assert "return a - b" in diff.old_text and "return a + b" in diff.new_text
    assert done[edit_id].locations[0].line == 2
    shell_id = next(i for i, u in starts.items() if u.kind == "execute")
    assert done[shell_id].status == "failed"

    # usage after every step, the gauge's figures: usage_pct of the window, the cost per call summed
    usage = client.of("usage_update")
    reports = [e["data"]["report"] for e in events if e["kind"] == "context_report"]
    assert len(reports) == len(FIX)
    assert len(usage) >= len(FIX)
    step_usage = [u for u in usage if u.field_meta["ctxagent"]["step"] in {r["step"] for r in reports}]
    for r in reports:
        u = next(u for u in step_usage if u.field_meta["ctxagent"]["step"] == r["step"])
        assert u.size == r["window"] and u.used == round(r["usage_pct"] * r["window"] / 100) and u.used > 0
    assert usage[-1].cost is not None and usage[-1].cost.currency == "USD"
    assert abs(usage[-1].cost.amount - _costs(events)) < 1e-6

    # the plan holds the task the user stated; the commands were advertised; /context answered without the model
    plans = client.of("plan")
    assert plans and [e.content for e in plans[-1].entries] == ["update the README"]
    commands = client.of("available_commands_update")
    assert {"compact", "rewind", "context", "remember"} <= {c.name for c in commands[0].available_commands}
    assert "Context:" in text and "step | turn | tokens" in text  # the per-step table of `ctxagent report`
    assert len(srv.requests()) == len(FIX)

    # load: a new connection resumes the session and replays its history before answering
    replay = RecordingClient()

    async def load() -> None:
        async with acp_agent(replay, repo, srv.url) as (conn, _proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            await conn.load_session(cwd=str(repo), session_id=sid, mcp_servers=[])

    run(load())
    users = [u.content.text for u in replay.of("user_message_chunk")]
    assert users[:2] == ["fix add()\n- [ ] update the README", "now check it"]
    replayed = replay.of("tool_call")
    assert [u.kind for u in replayed] == ["read", "edit", "execute"]
    assert [u.status for u in replayed] == ["completed", "completed", "failed"]
    assert "Fixed `add`: it subtracted." in replay.text()
