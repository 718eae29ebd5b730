"""OpenAI Chat Completions provider (the official `openai` SDK): streaming, tools, usage.

With a `base_url` it serves any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio,
OpenRouter); a base URL without a path gets `/v1` appended. The system prompt is the first message;
tool results are `{"role": "tool", "tool_call_id": ...}` messages placed right after the assistant
message that called them (an injected warm / summary block in between would be rejected, so
user-side text of the same group follows the tool messages, merged into one user message).

Usage: `prompt_tokens` is the whole prompt; the cached part (prompt_tokens_details.cached_tokens) is
reported as `cache_read` and subtracted from `input_tokens`, so `Usage.prompt_tokens` equals the
reported prompt_tokens. A response over the size cap (`response_cap.py`) is cut, kept and marked,
ending with Stop("response_cap"). The client and the error mapping are shared with anthropic.py
(`client.py`), and so is the stream's idle timeout (`stream_watch.py`); `list_models` reads the server's model list (`GET /v1/models`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ctxagent.agent.providers.client import (
    END,
    TOO_LARGE,
    SDKProvider,
    as_date,
    cut_events,
    sdk_client,
)
from ctxagent.agent.providers.images import ImageLoad, base64_of, unreadable
from ctxagent.agent.providers.protocol import (
    CatalogueModel,
    Stop,
    StreamEvent,
    TextDelta,
    Waiting,
    refuse_server_edits,
)
from ctxagent.agent.providers.response_cap import MAX_RESPONSE_CHARS, TextBudget, cut_mark
from ctxagent.agent.providers.stream_watch import TIMED_OUT
from ctxagent.context.errors import StreamError
from ctxagent.context.request import Message, Request, ToolCall, Usage

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_FINISH = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens"}


def normalize_base_url(base_url: str | None) -> str:
    """`http://host:port` → `http://host:port/v1`; a URL with a path is kept as given."""
    if not base_url:
        return DEFAULT_BASE_URL
    parts = urlsplit(base_url.strip())
    if parts.path in ("", "/"):
        parts = parts._replace(path="/v1")
    return urlunsplit(parts).rstrip("/")


def _image_parts(m: Message, load: ImageLoad | None) -> list[dict[str, Any]]:
    """A message's images as `image_url` parts (a base64 data URI); one that cannot be read, as a text."""
    parts: list[dict[str, Any]] = []
    for part in m.images:
        data = base64_of(part, load)
        parts.append({"type": "image_url", "image_url": {"url": f"data:{part.media_type};base64,{data}"}}
                     if data is not None else {"type": "text", "text": unreadable(part)})
    return parts


def wire_messages(system: str, messages: list[Message], load: ImageLoad | None = None) -> list[dict[str, Any]]:
    """Neutral messages → Chat Completions `messages`; `load` reads an image's bytes. A tool message
    takes text parts only (the SDK's ChatCompletionToolMessageParam), so a tool result's images follow
    its group of tool messages in the user message, named by their call."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    pending_text: list[str] = []
    pending_images: list[dict[str, Any]] = []

    def flush_text() -> None:
        if pending_images:
            text = [{"type": "text", "text": "\n\n".join(pending_text)}] if pending_text else []
            out.append({"role": "user", "content": text + pending_images})
        elif pending_text:
            out.append({"role": "user", "content": "\n\n".join(pending_text)})
        pending_text.clear()
        pending_images.clear()

    for m in messages:
        if m.role == "tool":
            content = m.content or "(no output)"
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "",
                        "content": f"[tool error] {content}" if m.is_error else content})
            if m.images:
                pending_images.append({"type": "text", "text": f"[the image{'s' if len(m.images) > 1 else ''} "
                                                               f"returned by tool call {m.tool_call_id}]"})
                pending_images.extend(_image_parts(m, load))
        elif m.role == "user":
            if m.content:
                pending_text.append(m.content)
            pending_images.extend(_image_parts(m, load))
        else:
            flush_text()
            wm: dict[str, Any] = {"role": "assistant", "content": m.content or None}
            if m.tool_calls:
                wm["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
                    for c in m.tool_calls
                ]
            elif not m.content:
                continue  # an empty assistant message carries nothing
            out.append(wm)
    flush_text()
    return out


def list_models(api_key: str, base_url: str | None, *, timeout: float, max_bytes: int,
                max_models: int) -> list[CatalogueModel]:
    """The models the key (or the server) can use; a shutdown date makes one deprecated until that day."""
    import openai  # the SDK, only when it is used (client.py)

    client = sdk_client(openai, openai.OpenAI, api_key=api_key, base_url=normalize_base_url(base_url),
                        timeout=timeout, max_bytes=max_bytes)
    out: list[CatalogueModel] = []
    for m in client.models.list():
        shutdown = as_date(getattr(m, "shutdown_date", None))
        # Listed means served today; a shutdown date makes it deprecated until that day. Without one
        # the listing says nothing about deprecation ("" keeps the registry's word).
        out.append(CatalogueModel(id=m.id, lifecycle="deprecated" if shutdown else "", retires=shutdown))
        if len(out) >= max_models:
            break
    return out


class OpenAIProvider(SDKProvider):
    name = "openai"
    key_env = "OPENAI_API_KEY"
    sdk_module = "openai"
    client_name = "OpenAI"
    normalize_base_url = staticmethod(normalize_base_url)

    def body(self, request: Request) -> dict[str, Any]:
        """The kwargs of `chat.completions.create`, which is also the JSON body on the wire."""
        max_tokens = self.output_tokens(request)
        body: dict[str, Any] = {"model": self.model, "messages": wire_messages(request.system, request.messages, self.attachments)}
        if request.tools:
            body["tools"] = [{"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.input_schema}} for t in request.tools]
        # OpenAI's newer models only accept max_completion_tokens; compatible servers know max_tokens.
        body["max_tokens" if self.custom_server else "max_completion_tokens"] = max_tokens
        body["stream"] = self.streaming
        if self.streaming:
            body["stream_options"] = {"include_usage": True}
        return body

    def _error_classes(self) -> dict[str, Any]:
        return {**super()._error_classes(), "api_error": self.sdk.APIError}

    def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
        refuse_server_edits(request, f"{self.name}:{self.model} (Chat Completions)")
        response = self.open_response(lambda body: self._client.chat.completions.create(**body), self.body(request))
        if not self.streaming:
            yield from _completion_events(response, self.max_response_chars)
            return
        yield from self._stream_events(response, cancel)

    def _stream_events(self, stream: Any, cancel: threading.Event | None) -> Iterator[StreamEvent]:
        calls: dict[int, dict[str, Any]] = {}
        finish: str | None = None
        usage = Usage()
        budget = TextBudget(self.max_response_chars)
        events = self.watch(stream)
        try:
            while True:
                if cancel is not None and cancel.is_set():
                    yield usage  # half-streamed tool calls are dropped: their arguments may be cut
                    yield Stop("cancelled")
                    return
                chunk = self.next_event(events)
                if chunk is TIMED_OUT:
                    continue
                if isinstance(chunk, Waiting):
                    yield chunk
                    continue
                if chunk is END:
                    break
                if chunk is TOO_LARGE:  # tool calls are complete only at the finish: a cut drops them
                    yield from _cut(budget, usage, self.bytes_cut_mark())
                    return
                if getattr(chunk, "usage", None) is not None:
                    usage = _usage(chunk.usage)
                over = False
                for choice in chunk.choices or []:
                    delta = choice.delta
                    if delta is not None:
                        if delta.content:
                            kept, over = budget.clip(delta.content)
                            if kept:
                                yield TextDelta(kept)
                        for tc in delta.tool_calls or []:
                            slot = calls.setdefault(tc.index if tc.index is not None else len(calls),
                                                    {"id": "", "name": "", "args": []})
                            if tc.id:
                                slot["id"] = tc.id
                            if tc.function is not None:
                                if tc.function.name:
                                    slot["name"] += tc.function.name
                                if tc.function.arguments:
                                    over = budget.clip(tc.function.arguments)[1] or over
                                    slot["args"].append(tc.function.arguments)
                    if choice.finish_reason:
                        finish = choice.finish_reason
                if over:
                    yield from _cut(budget, usage)
                    return
        finally:
            events.close()
        if finish is None:
            raise StreamError(f"the stream from {self.name}:{self.model} ended without a finish_reason (connection cut?)")
        yield from _calls_events(calls)
        yield usage
        yield Stop(_FINISH.get(finish, finish))


def _cut(budget: TextBudget, usage: Usage, mark: str = "") -> Iterator[StreamEvent]:
    yield from cut_events(mark or cut_mark(budget.limit), usage)


def _calls_events(calls: dict[int, dict[str, Any]]) -> Iterator[ToolCall]:
    for index in sorted(calls):
        slot = calls[index]
        yield ToolCall.parsed(slot["id"] or f"call_{index}", slot["name"], "".join(slot["args"]))
    calls.clear()


def _usage(u: Any) -> Usage:
    prompt = int(getattr(u, "prompt_tokens", 0) or 0)
    details = getattr(u, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    cached = min(cached, prompt)
    return Usage(input_tokens=prompt - cached, output_tokens=int(getattr(u, "completion_tokens", 0) or 0),
                 cache_read=cached)


def _completion_events(completion: Any, max_chars: int = MAX_RESPONSE_CHARS) -> Iterator[StreamEvent]:
    """Events of a non-streamed chat.completion (streaming=False)."""
    choice = completion.choices[0] if completion.choices else None
    usage = _usage(completion.usage) if completion.usage is not None else Usage()
    budget = TextBudget(max_chars)
    if choice is not None:
        message = choice.message
        if message.content:
            kept, over = budget.clip(message.content)
            yield TextDelta(kept)
            if over:
                yield from _cut(budget, usage)
                return
        for i, tc in enumerate(message.tool_calls or []):
            fn = getattr(tc, "function", None)
            raw = getattr(fn, "arguments", "") or ""
            if budget.clip(raw)[1]:
                yield from _cut(budget, usage)
                return
            yield ToolCall.parsed(tc.id or f"call_{i}", getattr(fn, "name", "") or "", raw)
    yield usage
    finish = choice.finish_reason if choice is not None else None
    yield Stop(_FINISH.get(finish or "stop", finish or "end_turn"))
