"""The one exception tree of ctxagent, documented in one place.

    CtxagentError                      base of everything we raise on purpose
    ├── ConfigError                    bad or missing configuration (unknown model, no key, bad TOML)
    │   ├── StateDirError              `.ctxagent/` is unusable: shipped by the repository (tracked or a
    │   │                              symlink), or cannot be created (read-only, disk full)
    │   └── RootRefusedError           the folder would be the repository root but never is one: the home
    │                                  folder, `/`, a folder above home, a system or shared folder
    │                                  (context/floor/roots.py); the message says how to go on
    ├── ContextError                   the context engine could not build a request
    │   └── ContextOverflowError       one message alone cannot fit W − reserve
    ├── HistoryError                   a session log that cannot be read or found
    ├── MemoryStoreError               the SQLite memory store failed
    ├── ToolError                      a tool refused or failed; shown to the model, never raised out of the loop
    │   ├── PathOutsideRepoError       a path that resolves outside the repository root
    │   ├── SandboxUnavailableError    commands are refused: bubblewrap cannot run here (the message names
    │                                  the setting that turns the sandbox off)
    │   └── PatternTimeoutError        a regular expression or glob ran past its time budget
    └── ProviderError                  the model provider failed (after retries where retrying makes sense)
        ├── AuthError                  401 / 403: bad or missing key (not retried)
        ├── ModelNotFoundError         404 on the model name (not retried)
        ├── BadRequestError            other 4xx (not retried)
        │   └── ContextLengthError     the provider says the prompt is too long (loop compacts and retries once)
        ├── RateLimitError             429 (retried with backoff, honouring retry-after)
        ├── OverloadedError            529 / "overloaded" (retried)
        ├── ServerError                5xx (retried)
        └── StreamError                connection reset or stream cut / malformed mid-response (retried
                                       only before the first byte; partial text is kept and marked)

The engine (`ctxagent.context`) owns this module because every other layer may import it.
"""

from __future__ import annotations


class CtxagentError(Exception):
    """Base of every error ctxagent raises on purpose."""


class ConfigError(CtxagentError):
    pass


class StateDirError(ConfigError):
    pass


class RootRefusedError(ConfigError):
    pass


class ContextError(CtxagentError):
    pass


class ContextOverflowError(ContextError):
    pass


class HistoryError(CtxagentError):
    pass


class MemoryStoreError(CtxagentError):
    pass


class ToolError(CtxagentError):
    pass


class PathOutsideRepoError(ToolError):
    pass


class SandboxUnavailableError(ToolError):
    pass


class PatternTimeoutError(ToolError):
    pass


class ProviderError(CtxagentError):
    """A provider failure. `status` is the HTTP status when there was one."""

    retryable: bool = False

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.attempts = 1  # how many times the call was tried before this error (agent/retry.py sets it)


class AuthError(ProviderError):
    pass


class ModelNotFoundError(ProviderError):
    pass


class BadRequestError(ProviderError):
    pass


class ContextLengthError(BadRequestError):
    pass


class RateLimitError(ProviderError):
    retryable = True


class OverloadedError(ProviderError):
    retryable = True


class ServerError(ProviderError):
    retryable = True


class StreamError(ProviderError):
    retryable = True
