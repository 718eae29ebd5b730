"""Names that meet once cleaned for the providers stay apart: a server listing `a.b`, `a_b`, `a b` and
`数据.读` (one name, `a_b`-like, for the model before) offers four tools, each reaching its own; two
servers `a.b` and `a_b` keep their tools apart, in a session and when one is resumed; a renamed tool's
description and `/mcp` say the server's own name. Real fixture server over stdio, real SDKs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mcp_types as types
from ctxagent.agent.mcp.catalog import McpCatalog
from ctxagent.agent.mcp.client import McpHub, ServerState
from ctxagent.agent.mcp.config import McpServerConfig, tool_name
from ctxagent.agent.mcp.runtime import McpRuntime
from ctxagent.context.tokens import CachedCounter, get_counter
from ctxagent.tools.contract import ToolContext
from ctxagent.tools.sandbox import SandboxPolicy

from .conftest import SERVER, run_ctxagent, stdio_server, user_config

COUNTER = CachedCounter(get_counter("o200k_base"))
COLLIDING = ("a.b", "a_b", "a b", "数据.读")
MODEL = "anthropic:claude-sonnet-5-5"


def _runtime(servers: dict[str, McpServerConfig], root: Path) -> McpRuntime:
    hub = McpHub(servers, root, SandboxPolicy())
    catalog = McpCatalog(hub, servers, counter=COUNTER, window=200_000, share=0.5)
    hub.on_change = catalog.on_change
    hub.start()
    hub.wait_started()
    return McpRuntime(hub, catalog, COUNTER)


def test_every_tool_of_a_server_keeps_a_name_of_its_own(tmp_path: Path) -> None:
    cfg = stdio_server(sandbox=False)
    cfg.args.append("--colliding")
    runtime = _runtime({"fx": cfg}, tmp_path)
    try:
        assert runtime.hub.states()[0].state == "ready", runtime.hub.states()[0].error
        offered = {t.name: t for t in runtime.catalog.drain()}
        mine = {own: offered[tool_name("fx", own)] for own in COLLIDING}
        assert len({t.name for t in mine.values()}) == len(COLLIDING)  # four names, four tools
        assert mine["a_b"].name == "mcp__fx__a_b"  # a name already in the providers' characters stays as it is
        for own, tool in mine.items():
            answer = tool.run({"text": "hi"}, ToolContext(root=tmp_path))
            assert not answer.is_error and answer.content == f"I am {own!r}: hi", (own, answer.content)
            renamed = f"(renamed: the server calls this tool {own!r})"
            assert (renamed in tool.description) is (own != "a_b"), tool.description
        table = runtime.markdown()
        assert "(renamed: the server's 'a.b')" in table and "(renamed: the server's '数据.读')" in table
        assert "`mcp__fx__a_b` " in table
    finally:
        runtime.close()


def test_two_servers_that_meet_once_cleaned_stay_two(tmp_path: Path) -> None:
    runtime = _runtime({"a.b": stdio_server(sandbox=False), "a_b": stdio_server(sandbox=False)}, tmp_path)
    try:
        offered = {t.name: t for t in runtime.catalog.drain()}
        dotted, plain = offered[tool_name("a.b", "reverse")], offered[tool_name("a_b", "reverse")]
        assert dotted is not plain and (dotted.server, plain.server) == ("a.b", "a_b")
        assert plain.name == "mcp__a_b__reverse"
        assert dotted.run({"text": "ab"}, ToolContext(root=tmp_path)).content == "ba"
    finally:
        runtime.close()
    # a resumed session: the logged names go back to their own servers
    servers = {"a.b": McpServerConfig(command="x"), "a_b": McpServerConfig(command="x")}
    catalog = McpCatalog(McpHub(servers, tmp_path, SandboxPolicy()), servers, counter=COUNTER, window=200_000,
                         share=0.5)
    logged = [{"name": tool_name(s, "reverse"), "description": "", "input_schema": {}} for s in ("a.b", "a_b")]
    catalog.preload(logged)
    assert [(t.name, t.server) for t in catalog.drain()] == [(tool_name("a.b", "reverse"), "a.b"),
                                                            (tool_name("a_b", "reverse"), "a_b")]


def test_names_do_not_depend_on_what_else_is_listed_or_its_order() -> None:
    servers = {"fx": McpServerConfig(command="x")}

    def offered(names: list[str]) -> list[str]:
        catalog = McpCatalog(McpHub(servers, Path("."), SandboxPolicy()), servers, counter=COUNTER,
                             window=200_000, share=0.5)
        catalog.on_change(ServerState("fx", "stdio", "ready", tools=[
            types.Tool(name=n, input_schema={"type": "object"}) for n in names]))
        return [t.name for t in catalog.drain()]

    alone = offered(["a.b"])
    assert offered(["a_b", "a.b"])[1] == offered(["a.b", "a_b"])[0] == alone[0] != "mcp__fx__a_b"
    long = [("x" * 70) + ".1", ("x" * 70) + ".2", "x" * 71]
    assert len(set(offered(long))) == 3 and all(len(n) <= 64 for n in offered(long))


def test_the_model_reaches_both_tools_in_a_session(repo: Path, scripted) -> None:  # noqa: ANN001
    args = json.dumps([SERVER, "stdio", "--colliding"])
    user_config(f"[mcp_servers.fx]\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n")  # sandboxed
    srv = scripted([
        {"tool_calls": [{"name": tool_name("fx", "a_b"), "arguments": {"text": "1"}},
                        {"name": tool_name("fx", "a.b"), "arguments": {"text": "2"}}]},
        {"text": "done"},
    ])
    out = run_ctxagent(repo, "-p", "call both", "--model", MODEL, "--base-url", srv.url, "--yes")
    assert out.returncode == 0, out.stderr
    first, second = srv.bodies()
    names = [t["name"] for t in first["tools"] if t["name"].startswith("mcp__fx__")]
    assert len(names) == len(set(names)) and {tool_name("fx", n) for n in COLLIDING} <= set(names)
    results = [b for m in second["messages"] if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    texts = [b["content"] if isinstance(b["content"], str) else "".join(c.get("text", "") for c in b["content"])
             for b in results]
    assert texts == ["I am 'a_b': 1", "I am 'a.b': 2"], texts
