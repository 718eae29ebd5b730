"""SDK failures → the one ctxagent error tree (`ctxagent.context.errors`), for both providers.

Both SDKs raise an `APIStatusError` with `.status_code`, `.body` and `.response` for HTTP errors,
an `APIConnectionError` for transport failures before a response, and let transport errors and
JSON errors escape while a stream is being read. The classification is the same for both; only the
key's environment variable in the messages differs.
"""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

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
from ctxagent.context.floor import bounded_json

_CONTEXT_HINTS = (
    "prompt is too long",
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too many tokens",
    "input is too long",
    "reduce the length",
)


def _error_fields(body: Any) -> tuple[str, str, str]:
    """(type, code, message) from an error body in either provider's shape."""
    err = body.get("error", body) if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return "", "", str(body or "")
    return str(err.get("type") or ""), str(err.get("code") or ""), str(err.get("message") or "")


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date)."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        value = headers.get("retry-after")
    except (AttributeError, ValueError, TypeError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def classify_status(status: int | None, body: Any, headers: Any, *, provider: str, model: str,
                    key_env: str) -> ProviderError:
    """One HTTP error (or an error event inside a stream, `status` 200) as a ProviderError."""
    kind, code, message = _error_fields(body)
    lowered = f"{kind} {code} {message}".lower()
    detail = message or kind or f"HTTP {status}"
    where = f"{provider}:{model}"
    if kind == "overloaded_error" or code == "overloaded" or status == 529:
        return OverloadedError(f"{where} is overloaded ({status or 'stream'}): {detail}", status=status)
    if status in (401, 403) or kind in ("authentication_error", "permission_error") or code == "invalid_api_key":
        return AuthError(f"authentication failed for {where} ({status}): {detail} — check {key_env}", status=status)
    if status == 429 or kind == "rate_limit_error" or code == "rate_limit_exceeded":
        return RateLimitError(f"rate limited by {where} (429): {detail}", status=status,
                              retry_after=parse_retry_after(headers))
    if status == 413 or code == "context_length_exceeded" or any(h in lowered for h in _CONTEXT_HINTS):
        return ContextLengthError(f"the prompt is too long for {where}: {detail}", status=status)
    if status == 404 or kind == "not_found_error" or code == "model_not_found":
        return ModelNotFoundError(f"model not found: {where} ({status}): {detail}", status=status)
    if (status is not None and status >= 500) or kind in ("api_error", "server_error"):
        return ServerError(f"{where} server error ({status}): {detail}", status=status)
    if status is not None and 400 <= status < 500:
        return BadRequestError(f"{where} rejected the request ({status}): {detail}", status=status)
    # An error event in the middle of a 200 stream of an unknown type: treat as a broken stream.
    return StreamError(f"{where} stream error: {detail}", status=status)


def classify_exception(e: BaseException, *, provider: str, model: str, key_env: str,
                       status_error: type[BaseException], connection_error: type[BaseException],
                       transport_error: type[BaseException],
                       api_error: type[BaseException] | None = None,
                       started: bool = False) -> ProviderError | None:
    """Map an SDK / transport / decoding exception; None if it is not a provider failure.

    `started`: the response had begun streaming (a connection failure is then a cut stream).
    """
    if isinstance(e, ProviderError):
        return e
    if isinstance(e, status_error):
        response = getattr(e, "response", None)
        status = getattr(e, "status_code", None)
        body = getattr(e, "body", None)
        if isinstance(body, str):
            try:
                body = bounded_json.loads(body, bounded_json.MESSAGE_DEPTH)
            except bounded_json.TooDeepError:
                body = None  # nested to death: the SDK's own message says what happened, not 400 kB of brackets
            except ValueError:
                pass
        if body is None or (isinstance(body, dict) and "error" not in body and "type" not in body):
            body = {"error": {"message": str(getattr(e, "message", "") or e)}}
        headers = getattr(response, "headers", None)
        return classify_status(status, body, headers, provider=provider, model=model, key_env=key_env)
    if isinstance(e, connection_error):
        cause = e.__cause__ or e.__context__
        why = f"{type(cause).__name__}: {cause}" if cause else str(e)
        if started:
            return StreamError(f"the stream from {provider}:{model} broke mid-response: {why}")
        return StreamError(f"connection to {provider}:{model} failed: {why}")
    if api_error is not None and isinstance(e, api_error):
        # An error object inside a 200 stream (no status): classify by its type / code.
        body = getattr(e, "body", None)
        body = {"error": body} if isinstance(body, dict) else {"error": {"message": str(e)}}
        return classify_status(None, body, None, provider=provider, model=model, key_env=key_env)
    if isinstance(e, transport_error):
        return StreamError(f"the stream from {provider}:{model} broke mid-response: {type(e).__name__}: {e}")
    if isinstance(e, json.JSONDecodeError):
        return StreamError(f"malformed stream data from {provider}:{model}: {e}")
    return None
