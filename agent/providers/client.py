"""What the SDK-backed providers (anthropic.py, openai.py) share: the SDK client, the response limits,
opening a response and reading a stream's next event, and the common end of a cut response.

Each SDK client is made the same way (`sdk_client`): the key passed explicitly, so the SDK never
falls back to profile files or other environment variables; the SDK's own retries off (`max_retries=0`:
`agent/retry.py` retries, visibly); every response body capped in bytes (`response_cap.py`). The
catalogue readers (`list_models` in each provider's module) use the same client.

The SDK is imported when the client is first needed (a request, a count, a catalogue), not when the
provider is made: `ctxagent inspect` builds a provider for its wire body alone and never pays for an
SDK, and the app imports it on a worker while the user types (`SDKProvider.warm`, tui/app/agent_start.py).
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any, ClassVar, NoReturn

import httpx2
from ctxagent.agent.providers import response_cap
from ctxagent.agent.providers.protocol import Stop, StreamEvent, TextDelta
from ctxagent.agent.providers.response_cap import (
    RESPONSE_CAP_STOP,
    capped_http_client,
    cut_mark,
    is_too_large,
)
from ctxagent.agent.providers.stream_watch import WatchedEvents, idle_timeout
from ctxagent.agent.providers.wire_errors import classify_exception
from ctxagent.context.errors import ProviderError, StreamError
from ctxagent.context.floor.sanitize import encodable
from ctxagent.context.request import Request, Usage

DEFAULT_TIMEOUT = 600.0  # seconds for one request: a long answer streams for minutes
END = object()  # `SDKProvider.next_event`: the stream ended
TOO_LARGE = object()  # `SDKProvider.next_event`: the body passed the byte cap


def sdk_client(sdk: Any, make: Callable[..., Any], *, api_key: str, base_url: str, timeout: float,
               max_bytes: int) -> Any:
    """`make(...)` (anthropic.Anthropic, openai.OpenAI) with ctxagent's settings; `sdk` is its module."""
    return make(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout,
                http_client=capped_http_client(sdk, max_bytes))


class SDKProvider:
    """The constructor and error handling of a provider speaking through an official SDK.

    A subclass names its SDK (`sdk_module`, `client_name`), its key's environment variable and the SDK's
    extra error classes, normalises its base URL, and writes `body`, `_create` and the stream readers.
    """

    name: str
    key_env: str  # named in an authentication error (the same as its ProviderSpec's)
    sdk_module: ClassVar[str]  # the SDK's module, imported on first use ("anthropic", "openai")
    client_name: ClassVar[str]  # its client class ("Anthropic", "OpenAI")
    # reads an image's bytes by handle when the body is made (lent by the agent: agent/step.py); None: images go as stubs
    attachments: Callable[[str], bytes | None] | None = None

    def __init__(self, model: str, api_key: str, base_url: str | None = None, max_tokens: int | None = None,
                 *, timeout: float = DEFAULT_TIMEOUT, streaming: bool = True,
                 max_response_chars: int | None = None, max_response_bytes: int | None = None,
                 idle_timeout: float | None = None):
        self.model = model
        self.idle_timeout = idle_timeout  # seconds without a stream event; None: stream_watch.idle_timeout()
        self.max_tokens = max_tokens
        self.streaming = streaming
        self.custom_server = bool(base_url)  # not the provider's own API: a proxy or a server of your own
        self.base_url = self.normalize_base_url(base_url)
        # None: the caps in response_cap.py, read now (so a test can lower them for one provider)
        self.max_response_chars = max_response_chars or response_cap.MAX_RESPONSE_CHARS
        self.max_response_bytes = max_response_bytes or response_cap.MAX_RESPONSE_BYTES
        self._client_args = (api_key, timeout)  # the client is made on first use (`_client`)

    @property
    def sdk(self) -> ModuleType:
        """The SDK module (imported now if it was not yet: seconds for `anthropic`)."""
        return importlib.import_module(self.sdk_module)

    @functools.cached_property
    def _client(self) -> Any:
        api_key, timeout = self._client_args
        return sdk_client(self.sdk, getattr(self.sdk, self.client_name), api_key=api_key, base_url=self.base_url,
                          timeout=timeout, max_bytes=self.max_response_bytes)

    def warm(self) -> None:
        """Import the SDK and make the client now (call it on a worker thread), so the first request
        does not wait for them."""
        self._client  # noqa: B018 - the cached property is the work

    @staticmethod
    def normalize_base_url(base_url: str | None) -> str:
        raise NotImplementedError

    def output_tokens(self, request: Request) -> int:
        """The request's max_tokens, capped by this provider's."""
        return request.max_tokens if self.max_tokens is None else min(request.max_tokens, self.max_tokens)

    def _error_classes(self) -> dict[str, Any]:
        return {"status_error": self.sdk.APIStatusError, "connection_error": self.sdk.APIConnectionError}

    def _map(self, e: BaseException, started: bool = False) -> ProviderError | None:
        return classify_exception(e, provider=self.name, model=self.model, key_env=self.key_env,
                                  transport_error=httpx2.HTTPError, started=started, **self._error_classes())

    def raise_mapped(self, e: BaseException, started: bool = False) -> NoReturn:
        """Raise `e` as the ctxagent error it is (or as itself when it is none of the provider's)."""
        mapped = self._map(e, started)
        if mapped is None:
            raise e
        raise mapped from e

    def open_response(self, create: Callable[[dict[str, Any]], Any], body: dict[str, Any]) -> Any:
        """`create(body)`: the response (or stream), its failure mapped. The body goes with its lone
        surrogates escaped (the SDK would raise UnicodeEncodeError on one, at every later request
        of the session); a response the SDK cannot decode (nested past json's stack) is a ProviderError."""
        try:
            return create(encodable(body))
        except RecursionError as e:
            raise ProviderError(f"the response from {self.name}:{self.model} nests too deep to read") from e
        except Exception as e:
            if is_too_large(e):  # a whole non-streamed body over the byte cap: nothing to keep
                raise ProviderError(f"the response from {self.name}:{self.model} was too large to read") from e
            self.raise_mapped(e)

    def watch(self, stream: Any) -> WatchedEvents:
        """The SDK stream's events, read with the idle timeout (`stream_watch.py`); `close()` it after."""
        return WatchedEvents(stream, timeout=idle_timeout(self.idle_timeout), label=f"{self.name}:{self.model}")

    def next_event(self, events: WatchedEvents | Iterator[Any]) -> Any:
        """The stream's next event, END at its end, TOO_LARGE past the byte cap; from a watched stream
        also a Waiting (yield it) or TIMED_OUT (nothing yet: look at cancel and ask again); other
        failures mapped (a stalled stream is a StreamIdleError)."""
        try:
            return events.next() if isinstance(events, WatchedEvents) else next(events)
        except StopIteration:
            return END
        except RecursionError as e:  # the SDK's json.loads of an event nested ~1,000 deep
            raise StreamError(f"malformed stream data from {self.name}:{self.model}: an event nests too deep") from e
        except Exception as e:
            if is_too_large(e):
                return TOO_LARGE
            mapped = self._map(e, started=True)
            if mapped is not None:
                raise mapped from e
            # anything else the SDK raises reading an event (bytes that are not UTF-8, a field of the
            # wrong type) is a broken stream too: the loop keeps what arrived and goes on
            raise StreamError(f"malformed stream data from {self.name}:{self.model}: {type(e).__name__}: {e}") from e

    def bytes_cut_mark(self) -> str:
        return cut_mark(self.max_response_bytes, "bytes")


def cut_events(mark: str, usage: Usage) -> Iterator[StreamEvent]:
    """The end of a response cut at the cap: the mark, the usage so far, Stop("response_cap")."""
    yield TextDelta(mark)
    yield usage
    yield Stop(RESPONSE_CAP_STOP)


def as_date(value: Any) -> dt.date | None:
    """A catalogue's date field (a datetime, a date or an ISO string) as a date; None when absent or garbled."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value)[:10])
    except ValueError:
        return None
