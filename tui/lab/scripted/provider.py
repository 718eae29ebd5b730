"""The in-process scripted model `scripted:PATH`: the loopback server's script, without HTTP.

Request N gets turn N of the script (format and faults: `ctxagent.tui.lab.scripted.script`). Usage is
computed deterministically from the neutral request body when the script gives none. Faults raise
the same ProviderError classes the real providers map the server's faults to; "cut" and
"malformed_sse" yield their text first, then raise, like a broken stream.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ctxagent.agent.providers.protocol import Stop, StreamEvent, TextDelta, refuse_server_edits
from ctxagent.context.errors import (
    AuthError,
    BadRequestError,
    ContextLengthError,
    ModelNotFoundError,
    OverloadedError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamError,
)
from ctxagent.context.request import Request, ToolCall, Usage
from ctxagent.tui.lab.scripted.images import SeenImage, say_images
from ctxagent.tui.lab.scripted.script import (
    CONTEXT_LENGTH_MESSAGE,
    EXHAUSTED_MESSAGE,
    Turn,
    call_id,
    chunk_text,
    load_agents,
    load_script,
    subagent_key,
    turn_usage,
)


def request_images(request: Request) -> list[SeenImage]:
    """The images the neutral request carries (what `{images}` in a turn's text names)."""
    return [SeenImage(p.media_type, p.width, p.height, p.size, "tool_result" if m.role == "tool" else "user")
            for m in request.messages for p in m.images]

REQUESTS_KEPT = 256


class ScriptedProvider:
    name = "scripted"

    def __init__(self, script_path: str | Path | list[Any] | dict[str, Any], max_tokens: int | None = None):
        self.turns: list[Turn] = load_script(script_path)
        self.agents = load_agents(script_path)  # a sub-agent's own turns, by task name
        self._agent_next: dict[str, int] = {"": 0}  # "": the main turn list
        self.model = str(script_path) if isinstance(script_path, (str, Path)) else "inline"
        self.max_tokens = max_tokens
        # the latest bodies received, for tests; bounded so a 1,000-turn session keeps flat memory
        self.requests: deque[dict[str, Any]] = deque(maxlen=REQUESTS_KEPT)
        self._next = 0
        self._lock = threading.Lock()

    @property
    def served(self) -> int:
        """How many requests were answered (faults included)."""
        return self._next

    def body(self, request: Request) -> dict[str, Any]:
        body = {"model": self.model, **request.to_dict()}
        if self.max_tokens is not None:
            body["max_tokens"] = min(request.max_tokens, self.max_tokens)
        return body

    def _fault_error(self, turn: Turn, body: dict[str, Any]) -> ProviderError:
        where = f"scripted:{self.model}"
        usage = turn_usage(turn, body)
        errors: dict[str, ProviderError] = {
            "429": RateLimitError(f"rate limited by {where} (429)", status=429, retry_after=turn.retry_after),
            "500": ServerError(f"{where} server error (500)", status=500),
            "529": OverloadedError(f"{where} is overloaded (529)", status=529),
            "404": ModelNotFoundError(f"model not found: {where} (404)", status=404),
            "401": AuthError(f"authentication failed for {where} (401)", status=401),
            "context_length": ContextLengthError(
                f"the prompt is too long for {where}: "
                + CONTEXT_LENGTH_MESSAGE.format(tokens=usage["input_tokens"]), status=400),
            "reset": StreamError(f"connection to {where} was reset before the first byte"),
            "cut": StreamError(f"the stream from {where} was cut mid-message"),
            "malformed_sse": StreamError(f"malformed stream data from {where}"),
        }
        return errors[str(turn.fault)]

    def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
        refuse_server_edits(request, f"scripted:{self.model}")
        body = self.body(request)
        key = subagent_key(body) if self.agents else None
        turns = self.turns if key is None else self.agents.get(key, [])
        with self._lock:
            self.requests.append(body)
            n = self._next + 1
            self._next += 1
            index = self._agent_next.get(key or "", 0)
            self._agent_next[key or ""] = index + 1
        if index >= len(turns):
            raise BadRequestError(EXHAUSTED_MESSAGE.format(count=len(turns), n=index + 1), status=400)
        turn = turns[index]
        if turn.fault is not None:
            error = self._fault_error(turn, body)
            if turn.fault in ("cut", "malformed_sse"):
                for piece in chunk_text(turn.text):
                    yield TextDelta(piece)
            raise error
        usage = turn_usage(turn, body)
        for piece in chunk_text(say_images(turn.text, request_images(request))):
            if cancel is not None and cancel.is_set():
                yield Usage(**usage)
                yield Stop("cancelled")
                return
            yield TextDelta(piece)
        for i, c in enumerate(turn.tool_calls):
            cid = c.id or call_id("call_scripted", n, i)
            # a scripted model may emit arguments that are not a JSON object (`raw`)
            yield ToolCall(cid, c.name, dict(c.arguments)) if c.raw is None else ToolCall.parsed(cid, c.name, c.raw)
        yield Usage(**usage)
        yield Stop(turn.final_stop_reason())
