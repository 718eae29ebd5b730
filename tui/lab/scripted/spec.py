"""The `scripted:PATH` provider: the lab's model for tests and the demo, registered like a plugin.

The runtime knows no scripted model. A front end (the command line, so the app and ACP too) or a test
imports this module, which registers the spec with the runtime's own `register`
(agent/providers/specs.py); importing it twice registers it once. Its replies come from a script file,
so a repository may never name it, trusted or not, nor a tool call (agent/trust.py: `untrusted_reason`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxagent.agent.providers import specs

if TYPE_CHECKING:
    from ctxagent.agent.providers.protocol import Provider


def _make_scripted(model: str, credentials: specs.Credentials, max_tokens: int | None) -> Provider:
    from ctxagent.tui.lab.scripted.provider import ScriptedProvider

    return ScriptedProvider(model, max_tokens=max_tokens)


SCRIPTED = specs.ProviderSpec(
    name="scripted", title="scripted", make=_make_scripted,
    uses_registry=False, summary_sibling=False,  # the script holds only the main model's turns
    images=True,  # the loopback server reads both wires' image blocks (tui/lab/scripted/images.py)
    # for tests and the demo: named by the user's own config, a flag or the demo, never by a repository
    # (agent/trust.py) nor a tool call (the task tool takes no model)
    untrusted_reason="a scripted model: the repository would choose the tool calls",
)


def register_scripted() -> specs.ProviderSpec:
    """The scripted spec, registered once."""
    return specs.find(SCRIPTED.name) or specs.register(SCRIPTED)


register_scripted()
