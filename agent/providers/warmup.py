"""The provider SDK, imported ahead of need: `warm_sdk(config)` on a worker thread while the user types.

The app calls it at its first frame (tui/app/agent_start.py), beside the agent's build: the build makes
the provider without its SDK (agent/providers/client.py makes the client on first use), so neither
waits for the other, and the first request finds the SDK loaded (or waits for the import under way).
"""

from __future__ import annotations

from collections.abc import Callable

from ctxagent.agent.config import Config
from ctxagent.agent.factory import provider_for, resolve_model
from ctxagent.agent.providers import specs
from ctxagent.agent.providers.registry import parse_model_name
from ctxagent.context.errors import CtxagentError


def warm_sdk(config: Config, before: Callable[[str], None] | None = None) -> str:
    """Import the SDK that `config`'s model speaks, now (seconds for `anthropic`: call it on a worker
    thread while the user types; the app does, tui/app/agent_start.py). `before(title)` is called first
    when there is an SDK to import. Returns the provider's title, or "" when there is nothing to import
    or the config names no usable model (building the agent says why)."""
    try:
        label, _ = resolve_model(config)
        provider = provider_for(config, label, 1024)
    except CtxagentError:
        return ""
    warm = getattr(provider, "warm", None)
    if warm is None:
        return ""
    title = specs.get(parse_model_name(label)[0]).title
    if before is not None:
        before(title)
    warm()
    return title
