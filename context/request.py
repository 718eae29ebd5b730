"""Provider-neutral request types: what the builder produces and the providers translate.

Roles: "user" (text from the user, or a block the engine injects such as the warm block or a
compaction summary), "assistant" (text and tool calls), "tool" (one tool result, answering the call
with the same id). Providers merge consecutive user/tool messages where their wire format needs it.

`Request.server_edits` asks the provider for its own server-side context management
(context/server_edits.py); a `Message` of kind "server_compaction" carries the block a server returned
(`block`, to be sent back verbatim). A message's `images` (ImagePart: a handle in the attachment
store, never the bytes) go to the provider's image blocks. All three are left out of `to_dict()` when unused, so the bodies (and
sha256) of requests without them are what they always were.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ctxagent.context.floor import bounded_json

if TYPE_CHECKING:
    from ctxagent.context.server_edits import ServerEdit

Role = Literal["user", "assistant", "tool"]


RAW_ARGUMENTS = "_raw"  # the one key of a call's arguments when the model sent text that is not a JSON object


@dataclass(frozen=True)
class ToolCall:
    """One tool call, the same shape in the provider's stream, in the log and in the request.

    `arguments` is the JSON object the model sent; when it sent something else — not JSON, not an
    object, or nested deeper than `bounded_json.MAX_DEPTH` (then cut to `bounded_json.KEPT`
    characters) — `{"_raw": text}`: kept so the conversation shows what was asked, and refused by
    the loop with a clear error.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parsed(cls, id: str, name: str, raw: str) -> ToolCall:
        """A call from its streamed JSON arguments: `{}` when empty, the raw text when not a JSON object
        (or one nested too deep)."""
        if not raw.strip():
            return cls(id, name, {})
        try:
            args = bounded_json.loads(raw)
        except bounded_json.TooDeepError as exc:  # kept short: it goes back to the model with each request
            return cls(id, name, {RAW_ARGUMENTS: bounded_json.clipped(raw, str(exc))})
        except ValueError:  # not JSON
            args = None
        return cls(id, name, args if isinstance(args, dict) else {RAW_ARGUMENTS: raw})

    @property
    def malformed(self) -> bool:
        return set(self.arguments) == {RAW_ARGUMENTS} and isinstance(self.arguments[RAW_ARGUMENTS], str)

    @property
    def raw_arguments(self) -> str:
        """What the model sent, for a malformed call ("" otherwise)."""
        return str(self.arguments[RAW_ARGUMENTS]) if self.malformed else ""


@dataclass(frozen=True)
class Usage:
    """What one model call consumed, as the provider reported it — the one shape of usage, from the
    provider's stream to the log (`AssistantData.usage`), the UI and the session's totals (a sum)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def prompt_tokens(self) -> int:
        """The whole prompt as the provider counted it (Anthropic splits cached parts out)."""
        return self.input_tokens + self.cache_read + self.cache_write

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens,
                     self.cache_read + other.cache_read, self.cache_write + other.cache_write)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ImagePart:
    """An image a message carries (context/images.py): the attachment store's handle and what the
    provider needs to say about it; the bytes are read from the store when the wire body is made.
    `tokens`: its cost by the request's provider's image-token rule (context/images.py)."""

    handle: str
    media_type: str
    width: int
    height: int
    size: int
    tokens: int = 0
    name: str = ""


@dataclass
class Message:
    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None  # role == "tool": the call this answers
    name: str | None = None  # role == "tool": the tool's name
    is_error: bool = False  # role == "tool": the result is an error
    kind: str = "message"  # "message" | "warm" | "summary" | "server_compaction" — what the engine put here and why
    event_id: int | None = None  # the log event this message renders (None for injected blocks)
    block: dict[str, Any] | None = None  # kind "server_compaction": the provider's block as it returned it
    images: tuple[ImagePart, ...] = ()  # role "user" or "tool": images beside the text (handles, not bytes)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["block"] is None:
            del d["block"]
        if not d["images"]:
            del d["images"]
        return d


@dataclass
class Request:
    system: str
    messages: list[Message]
    tools: list[ToolSpec]
    max_tokens: int = 8192
    server_edits: tuple[ServerEdit, ...] = ()  # the provider's own context management to ask for
    # leading messages the engine keeps unchanged until its next cut (the pruned part of the history):
    # a provider with explicit cache breakpoints marks there, so a cut further on re-reads this prefix
    stable_messages: int = 0
    # ... and where that part ended at the engine's previous cut (0 < anchor < stable_messages, else 0): a cut
    # moves the end further than a breakpoint looks back (20 blocks), so a breakpoint here finds the entry the
    # previous cut's requests wrote, and the cut re-writes only what follows it
    anchor_messages: int = 0
    cache_ttl: str = "5m"  # the prompt cache's TTL option (context/prompt_cache.py); "1h": Anthropic's 1-hour entries

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"system": self.system, "messages": [m.to_dict() for m in self.messages],
                             "tools": [asdict(t) for t in self.tools], "max_tokens": self.max_tokens}
        if self.server_edits:
            d["server_edits"] = [e.to_wire() for e in self.server_edits]
        if self.stable_messages:
            d["stable_messages"] = self.stable_messages
        if self.anchor_messages:
            d["anchor_messages"] = self.anchor_messages
        if self.cache_ttl != "5m":
            d["cache_ttl"] = self.cache_ttl
        return d
