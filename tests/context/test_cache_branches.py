"""A cache shared by two logs that agree on a prefix must give each log the request a fresh cache gives
(the bench replays several strategies' logs through one cache; a memo keyed by event id alone leaked
one log's tool name into the other's cleared line)."""

from __future__ import annotations

from ctx_helpers import Log, counter, inputs
from ctxagent.context.budget import Budget
from ctxagent.context.builder.cache import BuildCache
from ctxagent.context.builder.dispatch import build, request_sha256


def _log(tool: str) -> Log:
    log = Log()
    log.add("session_start", session="p")
    log.user("fix the parser")
    log.step(tool, {"pattern": "x"}, "\n".join(f"{i} line value={i * 3}" for i in range(400)))
    for n in range(6):
        log.step("read_file", {"path": f"f{n}.py"}, "\n".join(f"{i} 行 code {i}" for i in range(300)))
    log.user("now the tests")
    return log


def test_a_shared_cache_gives_each_branch_its_own_request() -> None:
    kw = {"budget": Budget(8000, max_output=256), "protect_turns": 0}
    shared = BuildCache()
    first, second = _log("grep"), _log("shell")
    build(inputs(first, c=counter(), cache=shared, **kw))
    warm = build(inputs(second, c=counter(), cache=shared, **kw))
    fresh = build(inputs(second, c=counter(), cache=BuildCache(), **kw))
    assert any("[cleared: old shell output" in m.content for m in fresh.request.messages)
    assert request_sha256(warm.request.to_dict()) == request_sha256(fresh.request.to_dict())
