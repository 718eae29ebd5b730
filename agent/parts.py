"""What the Agent is made of, and the three effects every piece of a turn repeats.

- `AgentParts`: the provider, tools, engine parts, memory and checkpoints, assembled by
  `agent/factory.py` (or by a test) and handed to `Agent` (agent/loop.py).
- `Journal`: append a typed event to the session log, ingest it into memory, emit the agent event.
  The step, the tool runner, the server's context management and the loop all go through it, so each
  effect has one spelling: memory trouble is reported and the turn goes on.
- `Approver` and `deny_mutations`: who says yes to an edit or a command (the headless default refuses).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ctxagent.agent.updates import AgentEvent, Notice, PermissionDecision, PermissionRequest
from ctxagent.context.events import ErrorData

if TYPE_CHECKING:
    from ctxagent.agent.checkpoints.store import Checkpoints
    from ctxagent.agent.mcp.runtime import McpRuntime
    from ctxagent.agent.providers.protocol import Provider
    from ctxagent.context.budget import Budget
    from ctxagent.context.builder.inputs import WarmProvider
    from ctxagent.context.calibrator import Calibrator
    from ctxagent.context.events import Payload
    from ctxagent.context.history import Event, SessionLog
    from ctxagent.context.images import ImageReader
    from ctxagent.context.memory import MemoryStore
    from ctxagent.context.spill import SpillStore
    from ctxagent.context.tokens import TokenCounter
    from ctxagent.tools.contract import ToolRegistry

T = TypeVar("T")

Approver = Callable[[PermissionRequest], PermissionDecision]


def deny_mutations(req: PermissionRequest) -> PermissionDecision:
    """The headless default without --yes: refuse edits and commands, telling the model why. (A call
    that needs the user's own yes — an instruction file — is refused with --yes too: nobody can give it.)"""
    if req.note and not req.can_remember:
        return PermissionDecision(allow=False, reason=f"{req.note} This headless run cannot ask the user; do not "
                                  "retry it — say what you would change instead.")
    return PermissionDecision(
        allow=False,
        reason=f"{req.tool} needs permission ({req.permission}) and this run is headless without --yes; "
        "do not retry it — explain what you would change instead.",
    )


@dataclass
class AgentParts:
    """Everything the loop needs, assembled by `agent/factory.py` (or by a test)."""

    provider: Provider
    registry: ToolRegistry
    counter: TokenCounter
    budget: Budget
    calibrator: Calibrator
    spill: SpillStore
    system: str
    model_label: str  # "anthropic:claude-sonnet-4-5"
    tokenizer: str = "o200k_base"  # the counter's family, recorded so `inspect` can rebuild a step
    memory: MemoryStore | None = None  # the project's memory
    warm: WarmProvider | None = None  # what the builder recalls from (None: the session ledger alone)
    summarize: Callable[[str], str] | None = None
    checkpoints: Checkpoints | None = None
    tool_config: dict[str, Any] = field(default_factory=dict)
    mcp: McpRuntime | None = None  # the session's MCP servers and their tools (agent/mcp/runtime.py)
    images: bool | None = None  # the model takes images (the factory asks the catalogue too); None: the registry's rule

    @property
    def takes_images(self) -> bool:
        """Whether the session's model takes image input (agent/providers/registry.py `takes_images`)."""
        if self.images is not None:
            return self.images
        from ctxagent.agent.providers.registry import label_takes_images

        return label_takes_images(self.model_label)

    @functools.cached_property
    def image_reader(self) -> ImageReader:
        """Images' bytes from the session's attachment store (the spill folder), by handle."""
        from ctxagent.context.images import ImageReader

        return ImageReader(self.spill)

    @property
    def user_memory(self) -> MemoryStore | None:
        """The user's store (preferences for every project): the one the warm provider recalls from."""
        store: MemoryStore | None = getattr(self.warm, "user_store", None)
        return store

    def memory_stores(self) -> list[MemoryStore]:
        """Every store this session writes to: the project's, and the user's (cross-project)."""
        return [s for s in (self.memory, self.user_memory) if s is not None]


def _ignore(_: AgentEvent) -> None:
    return None


class Journal:
    """The session log, memory and the front end, as the pieces of a turn use them."""

    def __init__(self, log: SessionLog, memory: MemoryStore | None,
                 on_event: Callable[[AgentEvent], None] | None = None):
        self.log = log
        self.memory = memory
        self.on_event = on_event or _ignore

    def append(self, payload: Payload) -> Event:
        """Log an event that memory has no use for (a permission, a checkpoint, the system prompt)."""
        return self.log.append(payload)

    def record(self, payload: Payload) -> Event:
        """Log a conversation event and ingest it into memory."""
        ev = self.log.append(payload)
        self.ingest([ev])
        return ev

    def ingest(self, events: list[Event]) -> None:
        memory = self.memory
        if memory is not None:
            self.safe(lambda: memory.ingest(events, self.log.session_id))

    def emit(self, ev: AgentEvent) -> None:
        self.on_event(ev)

    def notice(self, message: str, level: str = "info") -> None:
        self.on_event(Notice(message, level))

    def error(self, message: str, error_type: str, step: int | None = None, *, level: str = "error") -> ErrorData:
        """An error the turn stops on: logged, and said once (a broken stream whose text is kept is
        said as a warning)."""
        error = ErrorData(message=message, error_type=error_type, step=step)
        self.log.append(error)
        self.notice(message, level)
        return error

    def safe(self, fn: Callable[[], T]) -> T | None:
        """Side systems (memory, checkpoints) must never kill a turn: report and go on."""
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001
            self.notice(f"{type(exc).__name__}: {exc}", "warning")
            return None
