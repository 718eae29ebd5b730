"""What the agent lends its tools during a turn (`ToolServices`): its own stores, its log, its session."""

from __future__ import annotations

from pathlib import Path

from ctxagent.agent.config import Config
from ctxagent.agent.loop import Agent
from ctxagent.agent.parts import AgentParts
from ctxagent.agent.session import open_session
from ctxagent.agent.updates import PermissionDecision, PermissionRequest
from ctxagent.context.budget import Budget
from ctxagent.context.calibrator import Calibrator
from ctxagent.context.floor.state_paths import user_state_dir
from ctxagent.context.memory import MemoryStore
from ctxagent.context.memory.recall import MemoryRecall
from ctxagent.context.spill import SpillStore
from ctxagent.context.tokens import CachedCounter, get_counter
from ctxagent.tools import make_registry
from ctxagent.tools.memory_tools import memory_tools
from ctxagent.tui.lab.scripted.provider import ScriptedProvider

PREFERENCE = "Always use type hints in Python code. 始终使用类型注解。"


def test_a_user_scope_store_memory_uses_the_agents_own_user_store(work_repo: Path, tmp_path: Path) -> None:
    session = open_session(work_repo, Config(model="scripted:inline", permission_mode="yolo"))
    project = MemoryStore.open(work_repo / ".ctxagent" / "memory.db")
    user = MemoryStore.open(tmp_path / "elsewhere" / "user-memory.db", scope="user")  # not the default path
    script = [
        {"tool_calls": [{"name": "store_memory",
                         "arguments": {"content": PREFERENCE, "type": "constraint", "scope": "user"}}]},
        {"text": "noted for every project"},
    ]
    parts = AgentParts(
        provider=ScriptedProvider(script), registry=make_registry(extra=memory_tools()),
        counter=CachedCounter(get_counter("o200k_base")), budget=Budget(64_000, max_output=1024),
        calibrator=Calibrator("scripted:inline"), spill=SpillStore(work_repo / ".ctxagent" / "spill"),
        system="You are a test agent.", model_label="scripted:inline",
        memory=project, warm=MemoryRecall(project, session.id, user_store=user),
    )
    asked: list[PermissionRequest] = []

    def approve(req: PermissionRequest) -> PermissionDecision:
        asked.append(req)
        return PermissionDecision(allow=True)

    agent = Agent(session, parts, approver=approve)
    try:
        done = agent.run_turn("remember this in every project")
        assert done.stop_reason == "end_turn", done.error
        assert [r.tool for r in asked] == ["store_memory"]  # user scope is asked even in yolo
        result = agent.log.of_kind("tool_result")[-1].tool_result
        assert not result.is_error and (result.meta.model_extra or {}).get("scope") == "user"
        # the record went to the agent's own user store, stamped with the session and turn ...
        (record,) = [r for r in user.list(type="constraint") if r.content == PREFERENCE]
        assert record.session == session.id and record.turn == 1
        # ... and no second handle on a user database was opened (nothing at the default path)
        assert not (user_state_dir() / "memory.db").exists()
        assert not [r for r in project.list(type="constraint") if r.content == PREFERENCE]
        assert agent.memory_stores() == [project, user]
    finally:
        session.log.close()
        project.close()
        user.close()
