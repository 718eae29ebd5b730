"""Typed events the agent loop emits while a turn runs — the UI (TUI or headless) renders them.

The loop calls `on_event(ev)` synchronously from the thread running the turn; a UI that lives on
another thread must hop over itself (the TUI uses `App.call_from_thread`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxagent.context.report import ContextReport
from ctxagent.context.request import Usage


@dataclass(frozen=True)
class TurnStarted:
    turn: int
    text: str


@dataclass(frozen=True)
class StepStarted:
    step: int
    turn: int


@dataclass(frozen=True)
class ContextBuilt:
    step: int
    report: ContextReport


@dataclass(frozen=True)
class AssistantDelta:
    step: int
    text: str


@dataclass(frozen=True)
class AssistantDone:
    step: int
    text: str
    tool_calls: int
    usage: Usage
    partial: bool = False  # the stream broke; `text` is what arrived


@dataclass(frozen=True)
class ModelWaiting:
    """The model's stream has sent nothing for `seconds` (0: it sends again): the TUI's status line
    says "waiting for the model (N s)", headless prints it to stderr. Past the idle timeout the
    step fails with a retryable error (agent/providers/stream_watch.py)."""

    step: int
    seconds: float


@dataclass(frozen=True)
class ToolStarted:
    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolFinished:
    call_id: str
    name: str
    content: str  # what the model sees (a spill preview when the output was spilled)
    is_error: bool
    duration_ms: int
    meta: dict[str, Any] = field(default_factory=dict)  # "diff", "files", "tests", "spill", ...


@dataclass(frozen=True)
class Notice:
    message: str
    level: str = "info"  # "info" | "warning" | "error"


@dataclass(frozen=True)
class McpStatus:
    """An MCP server's state changed (ready, failed, crashed, stopped): the status bar and `/mcp`
    show it. Sent from the MCP thread, between the turn's own events."""

    server: str
    state: str  # agent/mcp/client.py STATES
    error: str = ""
    tools: int = 0


@dataclass(frozen=True)
class CompactionDone:
    first_id: int
    last_id: int
    method: str  # "model" | "extractive"
    tokens_before: int
    tokens_after: int
    summary: str = ""  # what now stands in for the range
    messages: int = 0  # user, assistant and tool messages the summary replaces (kept in the log)
    first_turn: int = 0  # the user turns whose messages it covers (0: none starts in the range)
    last_turn: int = 0


@dataclass(frozen=True)
class TurnFinished:
    turn: int
    # "end_turn" | "max_tokens" | "response_cap" (the last reply was cut: providers/protocol.py
    # CUT_STOPS) | "max_steps" | "cancelled" | "error"
    stop_reason: str
    text: str
    steps: int
    error_type: str = ""  # with "error": the exception's name ("AuthError", "ContextLengthError", …)
    error: str = ""  # with "error": the message, as logged and said


@dataclass(frozen=True)
class PermissionRequest:
    call_id: str
    tool: str
    permission: str  # "edit" | "command"
    arguments: dict[str, Any]
    preview: str  # the diff of an edit, or the command line (agent/permissions.py: nothing hidden)
    target: str = ""  # the exact command or path an "allow for this session" answer would cover
    note: str = ""  # what the user should know first (an instruction file, a test command the model chose)
    can_remember: bool = True  # False: no allowance covers this call (it is asked every time)
    agent: str = ""  # who asks, when not the session's own agent: "sub-agent ID (its task)"


@dataclass(frozen=True)
class PermissionDecision:
    allow: bool
    remember: bool = False  # allow for the rest of this session
    reason: str = ""  # passed to the model on deny


@dataclass(frozen=True)
class SubAgentUpdate:
    """A sub-agent's event (agent/subagents/), forwarded through its parent's stream under the id of
    the `task` call that started it."""

    call_id: str
    session: str  # the sub-agent's session id
    description: str  # its task, as the call named it
    event: AgentEvent


@dataclass(frozen=True)
class HandoffDrafted:
    """A new session's opening message, drafted (/handoff or the handoff tool): the app opens the
    editor on it; headless prints it."""

    goal: str
    text: str
    event_id: int  # the `handoff` event in the old session's log
    by: str = "user"


AgentEvent = (
    TurnStarted | StepStarted | ContextBuilt | AssistantDelta | AssistantDone | ModelWaiting | ToolStarted
    | ToolFinished | Notice | McpStatus | CompactionDone | TurnFinished | HandoffDrafted | SubAgentUpdate
)
