"""Whole sessions: `ctxagent -p` with MCP servers from the user's config, the real SDKs (anthropic,
mcp) and the loopback scripted model. The model calls an MCP tool and its result reaches the next
request; 200 tools start behind `search_tools`, and loading some keeps the request's prefix."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from .conftest import SERVER, run_ctxagent, session_events, user_config

MODEL = "anthropic:claude-sonnet-5-5"


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"]


def _result_text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "".join(c.get("text", "") for c in content)


def _stdio(name: str, *extra: str, more: str = "") -> str:
    args = json.dumps([SERVER, "stdio", *extra])
    return f'[mcp_servers.{name}]\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n{more}\n'


def test_model_calls_an_mcp_tool_and_sees_its_result(repo: Path, scripted) -> None:
    user_config(_stdio("fx"))  # the sandbox (the default) runs the server
    srv = scripted([
        {"text": "Reversing.", "tool_calls": [{"name": "mcp__fx__reverse", "arguments": {"text": "héllo 世界"}}]},
        {"text": "It is 界世 olléh."},
    ])
    out = run_ctxagent(repo, "-p", "reverse it", "--model", MODEL, "--base-url", srv.url, "--yes", "--output", "json")
    assert out.returncode == 0, out.stderr
    first, second = srv.bodies()
    names = [t["name"] for t in first["tools"]]
    assert {"mcp__fx__reverse", "mcp__fx__add", "read_file"} <= set(names)
    assert names.index("read_file") < names.index("mcp__fx__reverse")  # built-in tools first
    (result,) = _tool_results(second)
    assert _result_text(result) == "界世 olléh" and not result.get("is_error")
    report = next(e for e in session_events(repo) if e["kind"] == "context_report")["data"]["report"]
    assert report["schema_tokens"]["fx"] > 0 and report["schema_tokens"]["built-in"] > 0


def test_errors_and_permissions(repo: Path, scripted) -> None:
    user_config(_stdio("fx", more="sandbox = false\nallow_tools = [\"reverse\"]"))
    srv = scripted([
        {"tool_calls": [{"name": "mcp__fx__reverse", "arguments": {"text": "ab"}},
                        {"name": "mcp__fx__fail", "arguments": {"reason": "bad input"}},
                        {"name": "mcp__fx__add", "arguments": {"a": 1, "b": 2}}]},
        {"text": "done"},
    ])
    out = run_ctxagent(repo, "-p", "go", "--model", MODEL, "--base-url", srv.url, "--output", "json")  # no --yes
    results = _tool_results(srv.bodies()[1])
    assert _result_text(results[0]) == "ba" and not results[0].get("is_error")  # allow_tools: no question
    assert results[1].get("is_error") is True  # isError reaches the model as a tool error
    assert results[2].get("is_error") is True and "permission denied" in _result_text(results[2])  # asked, refused
    assert json.loads(out.stdout.strip().splitlines()[-1])["refused"]


def test_a_failing_server_is_reported_and_its_tools_answer_errors(repo: Path, scripted) -> None:
    user_config(_stdio("fx", more="sandbox = false") + _stdio("dead", more="sandbox = false").replace(
        '"stdio"]', '"silent"]') + "startup_timeout = 1\n")
    srv = scripted([
        {"tool_calls": [{"name": "mcp__fx__die", "arguments": {}}]},
        {"tool_calls": [{"name": "mcp__fx__reverse", "arguments": {"text": "x"}}]},
        {"text": "the server is gone"},
    ])
    out = run_ctxagent(repo, "-p", "go", "--model", MODEL, "--base-url", srv.url, "--yes", "--output", "json")
    assert out.returncode == 0, out.stderr
    assert "MCP server dead failed: no answer to initialize within 1s" in out.stderr
    bodies = srv.bodies()
    assert len(bodies) == 3
    assert _tool_results(bodies[1])[0]["is_error"] is True
    last = _result_text(_tool_results(bodies[2])[-1])
    assert "crashed" in last or "exited" in last or "closed" in last.lower()


def test_200_tools_start_behind_search_tools_and_loading_keeps_the_prefix(repo: Path, scripted, http_server) -> None:
    url = http_server(tools=200)
    user_config(f'window = 64000\n[mcp_servers.web]\nurl = "{url}"\n')
    srv = scripted([
        {"tool_calls": [{"name": "search_tools", "arguments": {"query": "天气预报 weather forecast", "limit": 3}}]},
        {"tool_calls": [{"name": "mcp__web__weather_0", "arguments": {"query": "Paris"}}]},
        {"text": "Sunny."},
    ])
    out = run_ctxagent(repo, "-p", "weather?", "--model", MODEL, "--base-url", srv.url, "--yes", "--output", "json")
    assert out.returncode == 0, out.stderr
    b1, b2, b3 = srv.bodies()
    n1 = [t["name"] for t in b1["tools"]]
    assert "search_tools" in n1 and not any(n.startswith("mcp__") for n in n1)  # no 200 schemas
    n2 = [t["name"] for t in b2["tools"]]
    assert len(n2) == len(n1) + 3 and all(n.startswith("mcp__web__weather_") for n in n2[len(n1):])
    for before, after in ((b1, b2), (b2, b3)):  # what was sent stays byte-identical: appended, never reordered
        strip = [{k: v for k, v in t.items() if k != "cache_control"} for t in before["tools"]]
        assert [{k: v for k, v in t.items() if k != "cache_control"} for t in after["tools"][:len(strip)]] == strip
        assert json.dumps(after["system"]) == json.dumps(before["system"])
    assert _result_text(_tool_results(b3)[-1]) == "weather #0: Paris"
    events = session_events(repo)
    prompts = [e for e in events if e["kind"] == "system_prompt"]
    # at the start (no server yet), with search_tools, with the loaded tools: each list is logged
    assert len(prompts) == 3 and [t["name"] for t in prompts[-1]["data"]["tools"]] == n2
    session = events[0]["data"].get("session") or next(p.stem for p in (repo / ".ctxagent" / "sessions").glob("*.jsonl"))
    for step in (1, 2, 3):
        check = run_ctxagent(repo, "inspect", session, "--step", str(step))
        assert check.returncode == 0 and "identical" in check.stdout, check.stdout + check.stderr


def test_a_10_mb_result_is_spilled_and_an_image_is_attached(repo: Path, scripted) -> None:
    user_config(_stdio("fx", more="sandbox = false"))
    srv = scripted([
        {"tool_calls": [{"name": "mcp__fx__blob", "arguments": {"size": 10_000_000}},
                        {"name": "mcp__fx__picture", "arguments": {}}]},
        {"text": "ok"},
    ])
    out = run_ctxagent(repo, "-p", "go", "--model", MODEL, "--base-url", srv.url, "--yes", "--output", "json")
    assert out.returncode == 0, out.stderr
    blocks = _tool_results(srv.bodies()[1])
    big, picture = (_result_text(r) for r in blocks)
    assert len(big) < 20_000 and "read_spill" in big  # a preview and a handle, never the 10 MB
    spills = list((repo / ".ctxagent" / "spill").iterdir())
    assert any(p.stat().st_size >= 10_000_000 for p in spills)
    # the image is an attachment the model sees: an image block inside the tool_result, its bytes in the
    # attachment store by sha256, never base64 in the text
    assert "image returned by the tool: PNG 1×1" in picture and "iVBOR" not in picture
    (image,) = [c for c in blocks[1]["content"] if c.get("type") == "image"]
    assert image["source"]["media_type"] == "image/png" and image["source"]["data"].startswith("iVBOR")
    assert any(p.name.endswith(".img") for p in spills)
    (ref,) = [i for e in session_events(repo) if e["kind"] == "tool_result" for i in e["data"].get("images", [])]
    assert ref["width"] == ref["height"] == 1 and ref["media_type"] == "image/png"


def test_a_resumed_session_starts_with_the_tools_it_loaded(repo: Path, scripted, http_server) -> None:
    url = http_server(tools=200)
    user_config(f'window = 64000\n[mcp_servers.web]\nurl = "{url}"\n')
    srv = scripted([
        {"tool_calls": [{"name": "search_tools", "arguments": {"query": "mcp__web__payments_6 mcp__web__payments_14"}}]},
        {"text": "loaded"},
        {"tool_calls": [{"name": "mcp__web__payments_6", "arguments": {"query": "order 7"}}]},
        {"text": "refunded"},
    ])
    first = run_ctxagent(repo, "-p", "find refunds", "--model", MODEL, "--base-url", srv.url, "--yes", "--output", "json")
    assert first.returncode == 0, first.stderr
    session = json.loads(first.stdout.strip().splitlines()[-1])["session"]
    again = run_ctxagent(repo, "-p", "refund order 7", "--resume", session, "--model", MODEL, "--base-url", srv.url,
                         "--yes", "--output", "json")
    assert again.returncode == 0, again.stderr
    bodies = srv.bodies()
    loaded = [t["name"] for t in bodies[1]["tools"]]
    assert "mcp__web__payments_6" in loaded
    assert [t["name"] for t in bodies[2]["tools"]] == loaded  # the same list, in the same order, after the resume
    assert _result_text(_tool_results(bodies[3])[-1]) == "payments #6: order 7"


def test_the_agent_uses_its_own_memory_over_mcp(repo: Path, scripted) -> None:
    from .conftest import BIN

    # the memory server writes .ctxagent/memory.db, which the sandbox keeps read-only: the user's own config says so
    user_config(f'memory = false\n[mcp_servers.memory]\ncommand = {json.dumps(str(BIN))}\n'
                f'args = ["mcp", "--project", {json.dumps(str(repo))}]\nsandbox = false\n'
                # a server's environment is the allowlist plus its own `env`: the test's CTXAGENT_HOME
                # (where the state folder's mark is recorded) is passed as a user with one would pass it
                f'env = {{ CTXAGENT_HOME = {json.dumps(os.environ["CTXAGENT_HOME"])} }}\n')
    srv = scripted([
        {"tool_calls": [{"name": "mcp__memory__store_memory",
                         "arguments": {"content": "We chose SQLite WAL for the cache 缓存", "type": "decision"}}]},
        {"tool_calls": [{"name": "mcp__memory__search_memory", "arguments": {"query": "缓存 SQLite"}}]},
        {"text": "SQLite WAL."},
    ])
    out = run_ctxagent(repo, "-p", "what did we choose?", "--model", MODEL, "--base-url", srv.url, "--yes",
                       "--output", "json")
    assert out.returncode == 0, out.stderr
    bodies = srv.bodies()
    assert "mcp__memory__search_memory" in [t["name"] for t in bodies[0]["tools"]]
    assert "SQLite WAL for the cache" in _result_text(_tool_results(bodies[2])[-1])


def test_mcp_servers_list_and_test(repo: Path) -> None:
    user_config(_stdio("fx", more="sandbox = false") + _stdio("dead", more="sandbox = false").replace(
        '"stdio"]', '"silent"]') + "startup_timeout = 1\n")
    listed = run_ctxagent(repo, "mcp-servers", "list")
    assert listed.returncode == 1  # one server failed
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()[1:]}
    assert lines["fx"].split()[1:4] == ["stdio", "ready", "7"] and "failed" in lines["dead"]
    assert "no answer to initialize within 1s" in lines["dead"]
    tested = run_ctxagent(repo, "mcp-servers", "test", "fx")
    assert tested.returncode == 0, tested.stderr
    assert "mcp__fx__reverse" in tested.stdout and "dead" not in tested.stdout
    assert run_ctxagent(repo, "mcp-servers", "test", "nope").returncode == 2


def test_the_bearer_token_never_reaches_the_log_or_the_model(repo: Path, scripted, http_server) -> None:
    token = "tok-live-7f3a9c2e5b1d4f60"
    user_config(f'[mcp_servers.web]\nurl = "{http_server()}"\nbearer_token_env_var = "WEB_TOKEN"\n')
    srv = scripted([
        {"tool_calls": [{"name": "mcp__web__reverse", "arguments": {"text": token[::-1]}}]},  # the server says it back
        {"text": "ok"},
    ])
    out = run_ctxagent(repo, "-p", "go", "--model", MODEL, "--base-url", srv.url, "--yes", "--output", "json",
                       env={"WEB_TOKEN": token})
    assert out.returncode == 0, out.stderr
    assert token not in json.dumps(srv.bodies()[1])
    log = (next((repo / ".ctxagent" / "sessions").glob("*.jsonl"))).read_text()
    assert token not in log and "WEB_TOKEN" not in out.stdout + out.stderr
    shown = run_ctxagent(repo, "config", env={"WEB_TOKEN": token})
    assert token not in shown.stdout


def test_a_server_that_changes_its_tools_mid_session_keeps_the_prefix(repo: Path, scripted) -> None:
    user_config(_stdio("fx", "--evolve", more="sandbox = false"))
    srv = scripted([
        {"tool_calls": [{"name": "mcp__fx__evolve", "arguments": {"add": ["lookup_zip"], "remove": ["blob"]}}]},
        {"tool_calls": [{"name": "mcp__fx__lookup_zip", "arguments": {"query": "10115 柏林"}},
                        {"name": "mcp__fx__blob", "arguments": {"size": 3}}]},
        {"text": "done"},
    ])
    out = run_ctxagent(repo, "-p", "evolve", "--model", MODEL, "--base-url", srv.url, "--yes", "--output", "json")
    assert out.returncode == 0, out.stderr
    b1, b2, b3 = srv.bodies()
    n1, n2 = [t["name"] for t in b1["tools"]], [t["name"] for t in b2["tools"]]
    assert "mcp__fx__blob" in n1 and "mcp__fx__lookup_zip" not in n1
    assert n2 == [*n1, "mcp__fx__lookup_zip"]  # the new tool appended; the removed one kept where it was
    assert [t["name"] for t in b3["tools"]] == n2
    for before, after in ((b1, b2), (b2, b3)):  # what was sent stays byte-identical
        strip = [{k: v for k, v in t.items() if k != "cache_control"} for t in before["tools"]]
        assert [{k: v for k, v in t.items() if k != "cache_control"} for t in after["tools"][:len(strip)]] == strip
        assert json.dumps(after["system"]) == json.dumps(before["system"])
    found, gone = _tool_results(b3)[-2:]
    assert _result_text(found) == "lookup_zip answers 10115 柏林" and not found.get("is_error")
    assert gone["is_error"] is True and "does not offer this tool any more" in _result_text(gone)
    session = json.loads(out.stdout.strip().splitlines()[-1])["session"]
    for step in (1, 2, 3):
        check = run_ctxagent(repo, "inspect", session, "--step", str(step))
        assert check.returncode == 0 and "identical" in check.stdout, check.stdout + check.stderr


def test_an_mcp_image_reaches_openai_after_the_tool_message(repo: Path, scripted) -> None:
    user_config(_stdio("fx", more="sandbox = false"))
    srv = scripted([{"tool_calls": [{"name": "mcp__fx__picture", "arguments": {}}]}, {"text": "ok"}])
    out = run_ctxagent(repo, "-p", "go", "--model", "openai:gpt-5.4-mini", "--base-url", srv.url, "--yes",
                       "--output", "json")
    assert out.returncode == 0, out.stderr
    messages = srv.bodies()[1]["messages"]
    tool = next(i for i, m in enumerate(messages) if m["role"] == "tool")
    assert isinstance(messages[tool]["content"], str) and "image returned by the tool: PNG 1×1" in messages[tool]["content"]
    after = messages[tool + 1]  # the chat wire's tool message takes text only: the image follows, named by its call
    assert after["role"] == "user"
    (url,) = [p["image_url"]["url"] for p in after["content"] if p.get("type") == "image_url"]
    assert url.startswith("data:image/png;base64,iVBOR")
