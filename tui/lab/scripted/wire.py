"""Wire shapes the loopback model server speaks: Anthropic Messages and OpenAI Chat Completions,
and both providers' model catalogues.

Pure functions from a scripted `Turn` to response bodies, SSE events and error bodies, shaped
exactly as the official SDKs parse them. The HTTP side (and the faults that break the transport)
lives in `server.py`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ctxagent.tui.lab.scripted.context_emulation import ServerReply
from ctxagent.tui.lab.scripted.script import (
    CONTEXT_LENGTH_MESSAGE,
    ScriptedModel,
    Turn,
    call_id,
    chunk_text,
)

ANTHROPIC = "anthropic"
OPENAI = "openai"
CREATED = 1_700_000_000  # a fixed timestamp keeps responses byte-for-byte reproducible


def _anthropic_error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _openai_error_body(message: str, kind: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def error_response(fmt: str, fault: str, *, model: str, tokens: int, message: str | None = None) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) of an HTTP-level fault in the provider's own error shape."""
    if fault == "429":
        msg = message or "Number of requests has exceeded your rate limit (scripted)."
        return 429, (_anthropic_error_body("rate_limit_error", msg) if fmt == ANTHROPIC
                     else _openai_error_body(msg, "requests", "rate_limit_exceeded"))
    if fault == "500":
        msg = message or "Internal server error (scripted)."
        return 500, (_anthropic_error_body("api_error", msg) if fmt == ANTHROPIC
                     else _openai_error_body(msg, "server_error"))
    if fault == "529":
        msg = message or "Overloaded (scripted)."
        return 529, (_anthropic_error_body("overloaded_error", msg) if fmt == ANTHROPIC
                     else _openai_error_body(msg, "overloaded_error", "overloaded"))
    if fault == "404":
        if fmt == ANTHROPIC:
            return 404, _anthropic_error_body("not_found_error", f"model: {model}")
        return 404, _openai_error_body(
            f"The model `{model}` does not exist or you do not have access to it.",
            "invalid_request_error", "model_not_found")
    if fault == "401":
        # Never echo the key the client sent: these bodies may end up in logs.
        if fmt == ANTHROPIC:
            return 401, _anthropic_error_body("authentication_error", "invalid x-api-key")
        return 401, _openai_error_body("Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
    if fault == "context_length":
        if fmt == ANTHROPIC:
            return 400, _anthropic_error_body("invalid_request_error", CONTEXT_LENGTH_MESSAGE.format(tokens=tokens))
        return 400, _openai_error_body(
            f"This model's maximum context length is 128000 tokens. However, your messages resulted in "
            f"{tokens} tokens. Please reduce the length of the messages.",
            "invalid_request_error", "context_length_exceeded", "messages")
    # "bad_request": the catch-all for an exhausted script or an unreadable request.
    msg = message or "bad request"
    return 400, (_anthropic_error_body("invalid_request_error", msg) if fmt == ANTHROPIC
                 else _openai_error_body(msg, "invalid_request_error"))


# ---------------------------------------------------------------- Anthropic Messages


def _anthropic_usage(usage: dict[str, int]) -> dict[str, Any]:
    return {
        "input_tokens": usage["input_tokens"],
        "output_tokens": usage["output_tokens"],
        "cache_read_input_tokens": usage["cache_read"],
        "cache_creation_input_tokens": usage["cache_write"],
    }


def _anthropic_ids(turn: Turn, n: int) -> list[str]:
    return [c.id or call_id("toolu_scripted", n, i) for i, c in enumerate(turn.tool_calls)]


def _with_iterations(usage: dict[str, Any], server: ServerReply | None) -> dict[str, Any]:
    """A compaction adds its own iteration (billed apart) before the message iteration."""
    if server is None or server.compaction_usage is None:
        return usage
    message = {"type": "message", **{k: usage[k] for k in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                                                           "cache_creation_input_tokens")}}
    return {**usage, "iterations": [server.compaction_usage, message]}


def anthropic_message(turn: Turn, n: int, model: str, usage: dict[str, int],
                      server: ServerReply | None = None) -> dict[str, Any]:
    """The non-streaming Messages response (with the server's context management report, when asked)."""
    content: list[dict[str, Any]] = []
    if server is not None and server.compaction is not None:
        content.append(dict(server.compaction))
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    for cid, c in zip(_anthropic_ids(turn, n), turn.tool_calls, strict=True):
        content.append({"type": "tool_use", "id": cid, "name": c.name, "input": c.arguments})
    out = {
        "id": f"msg_scripted_{n:04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": turn.final_stop_reason(),
        "stop_sequence": None,
        "usage": _with_iterations(_anthropic_usage(usage), server),
    }
    if server is not None and server.context_management() is not None:
        out["context_management"] = server.context_management()
    return out


def anthropic_events(turn: Turn, n: int, model: str, usage: dict[str, int], *, text_only: bool = False,
                     server: ServerReply | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """The SSE events of a streamed Messages response, as (event name, data).

    `text_only` stops after the text deltas (what a cut stream has sent before it drops). A server
    compaction streams first (content_block_start, compaction_delta*); the context management report
    and the compaction iteration come with message_delta.
    """
    start_usage = _anthropic_usage(usage) | {"output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": {
        "id": f"msg_scripted_{n:04d}", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage}}
    index = 0
    if server is not None and server.compaction is not None:
        block = server.compaction
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": {**block, "content": ""}}
        for piece in chunk_text(str(block["content"]), 40):
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "compaction_delta", "content": piece}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    if turn.text:
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": {"type": "text", "text": ""}}
        yield "ping", {"type": "ping"}
        for piece in chunk_text(turn.text):
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "text_delta", "text": piece}}
        if text_only:
            return
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    if text_only:
        return
    for cid, c in zip(_anthropic_ids(turn, n), turn.tool_calls, strict=True):
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": {"type": "tool_use", "id": cid, "name": c.name, "input": {}}}
        for piece in chunk_text(c.arguments_json, 9):
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "input_json_delta", "partial_json": piece}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    delta: dict[str, Any] = {"type": "message_delta",
                             "delta": {"stop_reason": turn.final_stop_reason(), "stop_sequence": None},
                             "usage": _with_iterations({"output_tokens": usage["output_tokens"]} if server is None
                                                       else _anthropic_usage(usage), server)}
    if server is not None and server.context_management() is not None:
        delta["context_management"] = server.context_management()
    yield "message_delta", delta
    yield "message_stop", {"type": "message_stop"}


def sse_event(name: str | None, data: dict[str, Any] | str) -> bytes:
    # JSON escapes for non-ASCII, as the real APIs send them: a lone surrogate in a scripted reply
    # (a model's broken text) stays encodable and reaches the client as `\udce9`
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=True)
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {payload}\n\n".encode()


ANTHROPIC_MALFORMED = b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {\n\n'
OPENAI_MALFORMED = b'data: {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "choices": [{"delta": \n\n'


# ---------------------------------------------------------------- OpenAI Chat Completions


def _openai_usage(usage: dict[str, int]) -> dict[str, Any]:
    prompt = usage["input_tokens"] + usage["cache_read"] + usage["cache_write"]
    return {
        "prompt_tokens": prompt,
        "completion_tokens": usage["output_tokens"],
        "total_tokens": prompt + usage["output_tokens"],
        "prompt_tokens_details": {"cached_tokens": usage["cache_read"]},
    }


_OPENAI_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def _openai_finish(turn: Turn) -> str:
    reason = turn.final_stop_reason()
    return _OPENAI_FINISH.get(reason, reason)


def _openai_ids(turn: Turn, n: int) -> list[str]:
    return [c.id or call_id("call_scripted", n, i) for i, c in enumerate(turn.tool_calls)]


def openai_completion(turn: Turn, n: int, model: str, usage: dict[str, int]) -> dict[str, Any]:
    """The non-streaming chat.completion response."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.tool_calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json}}
            for cid, c in zip(_openai_ids(turn, n), turn.tool_calls, strict=True)
        ]
    return {
        "id": f"chatcmpl-scripted-{n:04d}",
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _openai_finish(turn), "logprobs": None}],
        "usage": _openai_usage(usage),
    }


def openai_chunks(turn: Turn, n: int, model: str, usage: dict[str, int], *,
                  include_usage: bool, text_only: bool = False) -> Iterator[dict[str, Any]]:
    """The chat.completion.chunk objects of a streamed response (without the final [DONE])."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": f"chatcmpl-scripted-{n:04d}", "object": "chat.completion.chunk", "created": CREATED,
                "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in chunk_text(turn.text):
        yield chunk({"content": piece})
    if text_only:
        return
    for i, (cid, c) in enumerate(zip(_openai_ids(turn, n), turn.tool_calls, strict=True)):
        yield chunk({"tool_calls": [{"index": i, "id": cid, "type": "function",
                                     "function": {"name": c.name, "arguments": ""}}]})
        for piece in chunk_text(c.arguments_json, 9):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    yield chunk({}, _openai_finish(turn))
    if include_usage:
        yield {"id": f"chatcmpl-scripted-{n:04d}", "object": "chat.completion.chunk", "created": CREATED,
               "model": model, "choices": [], "usage": _openai_usage(usage)}


# ---------------------------------------------------------------- the model catalogue (GET /v1/models)


def _anthropic_model(m: ScriptedModel) -> dict[str, Any]:
    retires = f"{m.retires_at}T00:00:00Z" if m.retires_at else None
    return {
        "type": "model", "id": m.id, "display_name": m.display_name or m.id,
        "created_at": "2026-01-01T00:00:00Z", "lifecycle": m.lifecycle,
        "max_input_tokens": m.max_input_tokens, "max_tokens": m.max_tokens,
        "deprecated_at": "2026-01-01T00:00:00Z" if m.lifecycle != "active" else None,
        "retires_at": retires,
    } | ({"capabilities": {"image_input": {"supported": m.image_input}}} if m.image_input is not None else {})


def _openai_model(m: ScriptedModel) -> dict[str, Any]:
    out: dict[str, Any] = {"id": m.id, "object": "model", "created": CREATED, "owned_by": "scripted"}
    if m.retires_at:
        out["shutdown_date"] = m.retires_at
    return out


def models_page(fmt: str, models: list[ScriptedModel], query: dict[str, list[str]]) -> dict[str, Any]:
    """The list response. Anthropic: lifecycle filter (active + deprecated unless asked) and
    cursor paging by `limit` / `after_id`; OpenAI: every model not retired, one page."""
    if fmt == OPENAI:
        return {"object": "list", "data": [_openai_model(m) for m in models if m.lifecycle != "retired"]}
    wanted = set(query.get("lifecycle", []) + query.get("lifecycle[]", [])) or {"active", "deprecated"}
    chosen = [m for m in models if m.lifecycle in wanted]
    after = (query.get("after_id") or [""])[0]
    if after:
        ids = [m.id for m in chosen]
        chosen = chosen[ids.index(after) + 1:] if after in ids else []
    try:
        limit = max(1, min(1000, int((query.get("limit") or ["20"])[0])))
    except ValueError:
        limit = 20
    page = chosen[:limit]
    return {"data": [_anthropic_model(m) for m in page], "has_more": len(chosen) > limit,
            "first_id": page[0].id if page else None, "last_id": page[-1].id if page else None}


def model_entry(fmt: str, model: ScriptedModel) -> dict[str, Any]:
    return _anthropic_model(model) if fmt == ANTHROPIC else _openai_model(model)


def model_not_found(fmt: str, model_id: str) -> tuple[int, dict[str, Any]]:
    return error_response(fmt, "404", model=model_id, tokens=0)
