"""One sub-agent run: its session, its parts, its turn, and what the parent is handed back.

The child sees only the system prompt (the parent's: base prompt and project instructions), a line
naming its task and its prompt — never the parent's history. Its log is a session like any other
(`ctxagent inspect CHILD --step N` rebuilds its steps), kept under `sessions/subagents/` so that
`--continue` and the session list keep meaning the user's sessions; its `session_start` names the
parent and the call, and the parent's tool_result meta names the child.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxagent.agent.loop import Agent, AgentParts, Approver
from ctxagent.agent.session import Session, new_session_id
from ctxagent.agent.subagents.limits import SUBAGENT_LINE
from ctxagent.agent.updates import (
    AgentEvent,
    PermissionDecision,
    PermissionRequest,
    SubAgentUpdate,
    TurnFinished,
)
from ctxagent.context.calibrator import Calibrator
from ctxagent.context.events import SessionStartData, UserData
from ctxagent.context.floor.sanitize import Sanitizer
from ctxagent.context.floor.state_paths import SUBAGENTS_FOLDER
from ctxagent.context.history import SessionLog
from ctxagent.context.request import ToolCall, Usage
from ctxagent.context.tool_meta import changed_files_of
from ctxagent.tools.contract import ToolRegistry
from ctxagent.tools.memory_tools import SUBAGENT_KEY

if TYPE_CHECKING:
    from ctxagent.agent.providers.protocol import Provider
    from ctxagent.context.builder.inputs import WarmProvider

# What a sub-agent may use unless the call names its tools: reading and searching, never changing.
DEFAULT_TOOLS = ("read_file", "grep", "list_files", "git_status", "git_diff", "read_spill", "read_event",
                 "search_memory")
TASK_TOOL = "task"  # never given to a sub-agent: nesting depth 1
DEFAULT_MAX_STEPS = 20

CHILD_PROMPT = """You are a sub-agent: another agent delegated one task to you. You do not see its conversation,
only the task below. Work with your tools, then end with a final answer that is complete on its own and
short (what you found, where: paths and line numbers) — it is all the other agent will read."""


def child_log_dir(parent_log: SessionLog) -> Path:
    """Where the children of a session keep their logs: next to the parent's, in `subagents/`."""
    return parent_log.path.parent / SUBAGENTS_FOLDER


def one_line(text: str, limit: int = 120) -> str:
    return " ".join(text.split())[:limit]


@dataclass
class ChildSpec:
    """What one `task` call asks for, checked (tool names known, depth respected)."""

    description: str
    prompt: str
    tools: list[str]
    model: str
    max_steps: int
    window: int | None = None


@dataclass
class ChildOutcome:
    session: str
    path: Path
    finished: TurnFinished
    model: str
    description: str = ""
    usage: Usage = field(default_factory=Usage)
    peak_tokens: int = 0
    last_event: int = 0  # the id of the child's last event: the handle to its final answer
    changed_files: list[str] = field(default_factory=list)  # what its tools changed (the parent's checkpoint covers them)


@dataclass
class ParentSide:
    """What a child needs of its parent: the parent's session and parts, how its events reach the
    parent's front end, the parent's approver, and how to reach another model."""

    session: Session
    parts: AgentParts
    on_event: Callable[[AgentEvent], None]
    approver: Approver
    make_provider: Callable[[str], Provider]
    default_model: Callable[[], str]  # the session's sub-agent model (config `subagent_model`), else its model
    approve_lock: threading.Lock = field(default_factory=threading.Lock)


def open_child_session(parent: Session, call_id: str, model: str, max_steps: int, window: int | None) -> Session:
    config = parent.config.model_copy(update={"model": model, "max_steps": max_steps, "auto_compact": False,
                                              **({"window": window} if window else {})}, deep=True)
    session_id = new_session_id()
    folder = child_log_dir(parent.log)
    folder.mkdir(exist_ok=True)
    log = SessionLog(path=folder / f"{session_id}.jsonl", session_id=session_id,
                     sanitize=Sanitizer(config.secrets()), pending_until=UserData.KIND)
    log.append(SessionStartData(session=session_id, model=model, cwd=str(parent.root), parent=parent.id,
                                parent_call=call_id))
    return Session(root=parent.root, state_dir=parent.state_dir, config=config, log=log)


def child_registry(parent: ToolRegistry, names: list[str]) -> ToolRegistry:
    tools = [parent.get(n) for n in names]
    return ToolRegistry([t for t in tools if t is not None])


def child_recall(warm: WarmProvider | None, session: str) -> WarmProvider | None:
    """The parent's memory recall for a child: the same block from the same stores (the user's binding
    constraints, the open to-dos, the relevant records), read-only — a child's steps never age the
    records, so recalling in it changes nothing the parent's next block shows."""
    from ctxagent.context.memory.recall import MemoryRecall

    if isinstance(warm, MemoryRecall):
        return MemoryRecall(warm.store, session, top_k=warm.top_k, age=False, user_store=warm.user_store)
    return warm


def child_parts(side: ParentSide, spec: ChildSpec, session: Session) -> AgentParts:
    p = side.parts
    provider = p.provider if spec.model == p.model_label else side.make_provider(spec.model)
    window = spec.window or p.budget.window
    budget = replace(p.budget, window=window, max_output=min(p.budget.max_output, max(1024, window // 8)))
    system = f"{p.system}\n\n{CHILD_PROMPT}\n{SUBAGENT_LINE}{spec.description}"
    return replace(p, provider=provider, registry=child_registry(p.registry, spec.tools), budget=budget,
                   calibrator=Calibrator(spec.model), system=system, model_label=spec.model,
                   warm=child_recall(p.warm, session.id),
                   checkpoints=p.checkpoints, tool_config={**p.tool_config, SUBAGENT_KEY: session.id})


def run_child(side: ParentSide, spec: ChildSpec, call_id: str, cancel: threading.Event) -> ChildOutcome:
    """Run the sub-agent's one turn to its end; what stopped it is in `finished.stop_reason`."""
    session = open_child_session(side.session, call_id, spec.model, spec.max_steps, spec.window)
    description = spec.description

    def forward(ev: AgentEvent) -> None:
        side.on_event(SubAgentUpdate(call_id, session.id, description, ev))

    def approve(req: PermissionRequest) -> PermissionDecision:
        # the parent's approver, one question at a time, naming the sub-agent that asks
        with side.approve_lock:
            return side.approver(replace(req, agent=f"sub-agent {session.id} ({one_line(description, 60)})"))

    parts = child_parts(side, spec, session)
    agent = Agent(session, parts, on_event=forward, approver=approve)
    # Its log is not ingested into memory: its "user" message is the parent model's prompt, which must
    # never become the user's binding words, nor its steps the model's. What it writes itself
    # (store_memory) carries the sub-agent as author (SUBAGENT_KEY); its answer reaches memory as the
    # parent's tool result.
    agent.journal.memory = None
    try:
        finished = agent.run_turn(spec.prompt, cancel)
    finally:
        session.log.sync()
    usage = Usage()
    calls: dict[str, ToolCall] = {}
    changed: dict[str, None] = {}
    for ev in session.log.events:
        if ev.kind == "assistant":
            usage = usage + ev.assistant.usage
            calls.update((c.id, c) for c in ev.assistant.tool_calls)
        elif ev.kind == "tool_result":
            changed.update(dict.fromkeys(changed_files_of(calls.get(ev.tool_result.call_id), ev.tool_result)))
    peak = max((r.total for r in agent.reports), default=0)
    return ChildOutcome(session=session.id, path=session.log.path, finished=finished, model=spec.model,
                        description=spec.description,
                        usage=usage, peak_tokens=peak, last_event=len(session.log.events) - 1,
                        changed_files=list(changed))


def child_usage_row(outcome: ChildOutcome) -> dict[str, Any]:
    u = outcome.usage
    return {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens, "cache_read": u.cache_read,
            "cache_write": u.cache_write}
