"""The provider contract: one `stream()` yielding neutral stream events.

A provider translates a `ctxagent.context.request.Request` into its wire body (`body()`, also used
by `ctxagent inspect` to show the exact request of a step) and streams the reply as:
TextDelta*, ToolCall*, Usage, Stop (ToolCall and Usage are context/request.py's: one shape from
the stream to the log). A provider that does server-side context management
(`Request.server_edits`) also yields ServerCompaction (before the reply's text) and ServerEdits
(before Usage) when its server acted, and a streaming one Waiting while its stream is silent
(`stream_watch.py`: its idle timeout). Failures raise `ctxagent.context.errors.ProviderError`
subclasses; retries with backoff live in `agent/retry.py`, not in the providers. A provider with a
model list of its own returns it as CatalogueModel entries (`list_models` in its module).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from ctxagent.context.events import AppliedEditData
from ctxagent.context.request import Request, ToolCall, Usage


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class Stop:
    reason: str  # "end_turn" | "tool_use" | "max_tokens" | "stop" | "cancelled" | ...


@dataclass(frozen=True)
class Waiting:
    """The stream has sent no event for `seconds` (0: events flow again) — `stream_watch.py`."""

    seconds: float


RESPONSE_CAP_STOP = "response_cap"  # the Stop reason of a response cut at ctxagent's size cap (response_cap.py)
CUT_STOPS = ("max_tokens", RESPONSE_CAP_STOP)  # stop reasons of a reply that was cut, not finished


@dataclass(frozen=True)
class ServerCompaction:
    """The server compacted the conversation before answering (Anthropic compact_20260112): `content`
    is its summary, `block` the compaction block as returned, to be sent back verbatim in its place."""

    content: str
    block: dict[str, Any]


@dataclass(frozen=True)
class ServerEdits:
    """What the server's own context management reported for this request."""

    applied: tuple[AppliedEditData, ...] = ()
    compaction_usage: Usage | None = None  # the compaction iteration, billed apart from Usage


@dataclass(frozen=True)
class TokenCount:
    """A server's count of a request's prompt (`count_tokens`): after its context edits, and before."""

    input_tokens: int
    original_input_tokens: int | None = None


@dataclass(frozen=True)
class CatalogueModel:
    """One model of a provider's own list (`providers/catalogue.py` caches them)."""

    id: str
    display_name: str = ""
    window: int = 0  # max input tokens; 0 when the provider does not say (OpenAI)
    max_output: int = 0  # 0 when the provider does not say
    lifecycle: str = ""  # "active" | "deprecated" | "retired"; "" when the provider does not say
    retires: dt.date | None = None
    dated: bool = True  # True: past `retires` means retired (OpenAI's shutdown date); Anthropic's
    #                     lifecycle field alone decides ("a past date is overdue, not retired")
    images: bool | None = None  # it takes image input (Anthropic's capabilities.image_input); None: not said

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["retires"] = self.retires.isoformat() if self.retires else None
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> CatalogueModel:
        retires = d.get("retires")
        return CatalogueModel(
            id=str(d["id"]), display_name=str(d.get("display_name") or ""), window=int(d.get("window") or 0),
            max_output=int(d.get("max_output") or 0), lifecycle=str(d.get("lifecycle") or ""),
            retires=dt.date.fromisoformat(retires) if retires else None, dated=bool(d.get("dated", True)),
            images=d["images"] if isinstance(d.get("images"), bool) else None)


StreamEvent = TextDelta | ToolCall | Usage | Stop | ServerCompaction | ServerEdits | Waiting


def refuse_server_edits(request: Request, where: str) -> None:
    """A provider without server-side context management must not silently drop a request for it."""
    if request.server_edits:
        from ctxagent.context.errors import BadRequestError

        kinds = ", ".join(e.type for e in request.server_edits)
        raise BadRequestError(f"{where} has no server-side context management ({kinds}): use an anthropic: model "
                              "or another strategy", status=None)


class Provider(Protocol):
    name: str  # its ProviderSpec's name (providers/specs.py)
    model: str  # the model name without the provider prefix

    def body(self, request: Request) -> dict[str, Any]:
        """The request body exactly as it goes on the wire (JSON-serialisable)."""
        ...

    def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[StreamEvent]: ...
