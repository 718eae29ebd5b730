"""Anthropic Messages API provider (the official `anthropic` SDK), streaming, tools, prompt caching.

Neutral → wire: role "tool" messages become `tool_result` blocks in a user message; consecutive
user-side messages (user text, tool results, injected warm/summary blocks) merge into one user
message, tool_result blocks first; assistant tool calls become `tool_use` blocks. Cache breakpoints
(`cache_control: {"type": "ephemeral"}`): the stable prefix (the system block, which covers the tool
schemas before it; the last tool schema when there is no system prompt), the end of the part already
cut, where that part ended at the previous cut, and the end of the history — `anthropic_cache.py`. A message's
images are `image` blocks with a base64 source (a tool result's inside its `tool_result` content).

The client, its retries (none: `agent/retry.py` retries, visibly) and the error mapping are shared
with openai.py (`client.py`), and so is the stream's idle timeout (`stream_watch.py`: a stalled
stream raises StreamIdleError; while it is silent, Waiting events). A stream that breaks after text
arrived — a cut, or an `error` event inside the 200 stream — yields that text first and then raises,
so the caller keeps it.
A response over the size cap (`response_cap.py`) is cut, kept and marked, ending with
Stop("response_cap"). The API's own context management (`Request.server_edits`) is spoken in
`anthropic_context.py`. `list_models` reads the provider's model catalogue (`GET /v1/models`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

from ctxagent.agent.providers.anthropic_cache import cache_marker, mark_history_end, mark_stable_end
from ctxagent.agent.providers.anthropic_context import (
    COUNT_KEYS,
    CompactionAssembler,
    EditsReport,
    add_context_management,
    betas_for,
    compaction_wire_block,
)
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
    TokenCount,
    Waiting,
)
from ctxagent.agent.providers.response_cap import MAX_RESPONSE_CHARS, TextBudget, cut_mark
from ctxagent.agent.providers.stream_watch import TIMED_OUT
from ctxagent.context.errors import StreamError
from ctxagent.context.request import RAW_ARGUMENTS, Message, Request, ToolCall, Usage

DEFAULT_BASE_URL = "https://api.anthropic.com"


def _image_blocks(m: Message, load: ImageLoad | None) -> list[dict[str, Any]]:
    """A message's images as `image` blocks (base64 source); one that cannot be read, as a text."""
    blocks: list[dict[str, Any]] = []
    for part in m.images:
        data = base64_of(part, load)
        blocks.append({"type": "image", "source": {"type": "base64", "media_type": part.media_type, "data": data}}
                      if data is not None else {"type": "text", "text": unreadable(part)})
    return blocks


def _user_blocks(group: list[Message], load: ImageLoad | None = None) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    texts: list[dict[str, Any]] = []
    for m in group:
        if m.role == "tool":
            text = m.content or "(no output)"
            # a tool_result's content may hold image blocks beside its text
            content: Any = [{"type": "text", "text": text}, *_image_blocks(m, load)] if m.images else text
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": content}
            if m.is_error:
                block["is_error"] = True
            results.append(block)
            continue
        texts.extend(_image_blocks(m, load))  # images before their text, as Anthropic advises
        if m.content and m.content.strip():  # the API rejects whitespace-only text blocks
            texts.append({"type": "text", "text": m.content})
    blocks = results + texts
    return blocks or [{"type": "text", "text": "(empty)"}]


def _assistant_blocks(m: Message) -> list[dict[str, Any]]:
    compaction = compaction_wire_block(m)
    if compaction is not None:
        return [compaction]
    blocks: list[dict[str, Any]] = []
    if m.content and m.content.strip():  # models sometimes stream only "\n\n" before a tool call
        blocks.append({"type": "text", "text": m.content})
    for call in m.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
    return blocks


def wire_messages(messages: list[Message], load: ImageLoad | None = None) -> list[dict[str, Any]]:
    """Neutral messages → Anthropic `messages` (alternating user / assistant); `load` reads an image's bytes."""
    out: list[dict[str, Any]] = []
    group: list[Message] = []

    def flush() -> None:
        if group:
            out.append({"role": "user", "content": _user_blocks(group, load)})
            group.clear()

    for m in messages:
        if m.role in ("user", "tool"):
            group.append(m)
            continue
        flush()
        blocks = _assistant_blocks(m)
        if not blocks:
            continue  # an empty assistant turn is not accepted by the API; its neighbours merge
        if out and out[-1]["role"] == "assistant":
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": "assistant", "content": blocks})
    flush()
    # Dropping an empty assistant turn can leave two user messages adjacent: merge them.
    merged: list[dict[str, Any]] = []
    for wm in out:
        if merged and merged[-1]["role"] == wm["role"] == "user":
            prev = merged[-1]["content"]
            both = prev + wm["content"]
            merged[-1]["content"] = ([b for b in both if b["type"] == "tool_result"]
                                     + [b for b in both if b["type"] != "tool_result"])
        else:
            merged.append(wm)
    return merged


def list_models(api_key: str, base_url: str | None, *, timeout: float, max_bytes: int,
                max_models: int) -> list[CatalogueModel]:
    """The provider's catalogue: every model with its window, maximum output and lifecycle."""
    import anthropic  # the SDK, only when it is used (client.py)

    client = sdk_client(anthropic, anthropic.Anthropic, api_key=api_key, base_url=base_url or DEFAULT_BASE_URL,
                        timeout=timeout, max_bytes=max_bytes)
    out: list[CatalogueModel] = []
    for m in client.models.list(limit=1000, lifecycle=["active", "deprecated", "retired"]):
        out.append(CatalogueModel(
            id=m.id, display_name=m.display_name or "", window=int(m.max_input_tokens or 0),
            max_output=int(m.max_tokens or 0), lifecycle=str(m.lifecycle or ""), retires=as_date(m.retires_at),
            dated=False, images=_image_input(m)))
        if len(out) >= max_models:
            break
    return out


def _image_input(m: Any) -> bool | None:
    """`capabilities.image_input.supported` of a catalogue entry, None when it says nothing."""
    supported = getattr(getattr(getattr(m, "capabilities", None), "image_input", None), "supported", None)
    return supported if isinstance(supported, bool) else None


class AnthropicProvider(SDKProvider):
    name = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    sdk_module = "anthropic"
    client_name = "Anthropic"

    @staticmethod
    def normalize_base_url(base_url: str | None) -> str:
        return base_url or DEFAULT_BASE_URL

    def body(self, request: Request) -> dict[str, Any]:
        """The kwargs of `messages.create`, which is also the JSON body on the wire."""
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.output_tokens(request)}
        ttl = request.cache_ttl  # the configured TTL option, which the build carries (config `cache_ttl`)
        if request.system:
            body["system"] = [{"type": "text", "text": request.system, "cache_control": cache_marker(ttl)}]
        body["messages"] = wire_messages(request.messages, self.attachments)
        mark_history_end(body["messages"], request.messages, ttl)
        mark_stable_end(body["messages"], request.messages, request.stable_messages, ttl)
        if request.tools:
            tools = [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
                     for t in request.tools]
            if not request.system:  # else the system block's breakpoint covers them (tools come first)
                tools[-1]["cache_control"] = cache_marker(ttl)
            body["tools"] = tools
        # the fourth breakpoint: where the cut part ended at the previous cut (anthropic_cache.py)
        mark_stable_end(body["messages"], request.messages, request.anchor_messages, ttl)
        add_context_management(body, request)
        body["stream"] = self.streaming
        return body

    def _create(self, body: dict[str, Any]) -> Any:
        betas = betas_for(body)
        if betas:  # the server's context management is a beta: its endpoint and headers
            return self._client.beta.messages.create(**body, betas=betas)
        return self._client.messages.create(**body)

    def count_tokens(self, request: Request) -> TokenCount:
        """The server's count of this request's prompt (`/v1/messages/count_tokens`), after its context
        edits; with edits asked for, also the count before them."""
        body = self.body(request)
        kwargs = {k: body[k] for k in COUNT_KEYS if k in body}
        try:
            result = self._client.beta.messages.count_tokens(**kwargs, betas=betas_for(body))
        except Exception as e:
            self.raise_mapped(e)
        report = getattr(result, "context_management", None)
        original = getattr(report, "original_input_tokens", None) if report is not None else None
        return TokenCount(int(result.input_tokens), int(original) if original is not None else None)

    def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
        response = self.open_response(self._create, self.body(request))
        if not self.streaming:
            yield from _message_events(response, self.max_response_chars)
            return
        yield from self._stream_events(response, cancel)

    def _stream_events(self, stream: Any, cancel: threading.Event | None) -> Iterator[StreamEvent]:
        usage = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
        stop_reason: str | None = None
        finished = False
        tool: dict[str, Any] | None = None  # the tool_use block being streamed
        compaction: CompactionAssembler | None = None  # the server's compaction block being streamed
        edits = EditsReport()
        budget = TextBudget(self.max_response_chars)
        events = self.watch(stream)
        try:
            while True:
                if cancel is not None and cancel.is_set():
                    events.close()
                    yield _usage(usage)
                    yield Stop("cancelled")
                    return
                ev = self.next_event(events)
                if ev is TIMED_OUT:
                    continue
                if isinstance(ev, Waiting):
                    yield ev
                    continue
                if ev is END:
                    break
                if ev is TOO_LARGE:
                    yield from _cut(budget, usage, self.bytes_cut_mark())
                    return
                kind = ev.type
                over = False
                if kind == "message_start":
                    _take_usage(usage, ev.message.usage)
                    edits.take(getattr(ev.message, "context_management", None), ev.message.usage)
                elif kind == "content_block_start":
                    block = ev.content_block
                    if block.type == "tool_use":
                        tool = {"id": block.id, "name": block.name, "json": []}
                    elif block.type == "compaction":
                        compaction = CompactionAssembler(block)
                        _, over = budget.clip(block.content or "")
                    elif block.type == "text" and block.text:
                        kept, over = budget.clip(block.text)
                        if kept:
                            yield TextDelta(kept)
                elif kind == "content_block_delta":
                    delta = ev.delta
                    if delta.type == "text_delta" and delta.text:
                        kept, over = budget.clip(delta.text)
                        if kept:
                            yield TextDelta(kept)
                    elif delta.type == "input_json_delta" and tool is not None:
                        _, over = budget.clip(delta.partial_json)
                        tool["json"].append(delta.partial_json)
                    elif delta.type == "compaction_delta" and compaction is not None:
                        _, over = budget.clip(delta.content or "")
                        compaction.add(delta)
                if over:  # a half-received tool call is dropped: its arguments are cut
                    yield from _cut(budget, usage)
                    return
                if kind == "content_block_stop":
                    if tool is not None:
                        yield ToolCall.parsed(tool["id"], tool["name"], "".join(tool["json"]))
                        tool = None
                    elif compaction is not None:
                        done = compaction.event()
                        if done is not None:
                            yield done
                        compaction = None
                elif kind == "message_delta":
                    stop_reason = ev.delta.stop_reason or stop_reason
                    _take_usage(usage, ev.usage)
                    edits.take(getattr(ev, "context_management", None), ev.usage)
                elif kind == "message_stop":
                    finished = True
        finally:
            events.close()
        if not finished:
            raise StreamError(f"the stream from {self.name}:{self.model} ended before message_stop (connection cut?)")
        reported = edits.event()
        if reported is not None:
            yield reported
        yield _usage(usage)
        yield Stop(stop_reason or "end_turn")


def _cut(budget: TextBudget, usage: dict[str, int], mark: str = "") -> Iterator[StreamEvent]:
    yield from cut_events(mark or cut_mark(budget.limit), _usage(usage))


def _take_usage(acc: dict[str, int], u: Any) -> None:
    """Fold a usage object in: message_start has all fields, message_delta cumulative output (and
    sometimes updated input counts)."""
    if u is None:
        return
    for attr, key in (("input_tokens", "input"), ("output_tokens", "output"),
                      ("cache_read_input_tokens", "cache_read"), ("cache_creation_input_tokens", "cache_write")):
        value = getattr(u, attr, None)
        if value is not None:
            acc[key] = int(value)


def _usage(acc: dict[str, int]) -> Usage:
    return Usage(input_tokens=acc["input"], output_tokens=acc["output"],
                 cache_read=acc["cache_read"], cache_write=acc["cache_write"])


def _message_events(message: Any, max_chars: int = MAX_RESPONSE_CHARS) -> Iterator[StreamEvent]:
    """Events of a non-streamed Message (streaming=False)."""
    budget = TextBudget(max_chars)
    acc = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
    _take_usage(acc, message.usage)
    for block in message.content:
        if block.type == "compaction":
            if budget.clip(block.content or "")[1]:
                yield from _cut(budget, acc)
                return
            done = CompactionAssembler(block).event()
            if done is not None:
                yield done
        elif block.type == "text" and block.text:
            kept, over = budget.clip(block.text)
            if kept:
                yield TextDelta(kept)
            if over:
                yield from _cut(budget, acc)
                return
        elif block.type == "tool_use":
            raw = json.dumps(block.input, ensure_ascii=False)
            if budget.clip(raw)[1]:
                yield from _cut(budget, acc)
                return
            yield (ToolCall(block.id, block.name, block.input) if isinstance(block.input, dict)
                   else ToolCall(block.id, block.name, {RAW_ARGUMENTS: raw}))
    edits = EditsReport()
    edits.take(getattr(message, "context_management", None), message.usage)
    reported = edits.event()
    if reported is not None:
        yield reported
    yield _usage(acc)
    yield Stop(message.stop_reason or "end_turn")
