"""Provider-neutral request types: what the builder produces and the providers translate.

Roles: "user" (text from the user, or a block the engine injects such as the warm block or a
compaction summary), "assistant" (text and tool calls), "tool" (one tool result, answering the call
with the same id). Providers merge consecutive user/tool messages where their wire format needs it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass
class Message:
    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None  # role == "tool": the call this answers
    name: str | None = None  # role == "tool": the tool's name
    is_error: bool = False  # role == "tool": the result is an error
    kind: str = "message"  # "message" | "warm" | "summary" — what the engine put here and why
    event_id: int | None = None  # the log event this message renders (None for injected blocks)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Request:
    system: str
    messages: list[Message]
    tools: list[ToolSpec]
    max_tokens: int = 8192

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
