"""Which MCP servers a session connects to: `[mcp_servers.NAME]` in config.toml (Codex's shape) and a
project's `.mcp.json` (Claude Code's shape), validated strictly into `McpServerConfig`.

    [mcp_servers.docs]                      # a local program, spoken to over stdio
    command = "uvx"
    args = ["docs-mcp", "--root", "."]
    env = { DOCS_LANG = "en" }
    enabled_tools = ["search", "read"]      # or disabled_tools = [...]
    startup_timeout = 20                    # seconds (Codex: startup_timeout_sec, also accepted)

    [mcp_servers.tracker]                   # Streamable HTTP
    url = "https://mcp.example.com/mcp"
    bearer_token_env_var = "TRACKER_TOKEN"  # the token is read from this variable, never stored
    headers = { "X-Team" = "core" }

A server the repository defines (its `.ctxagent/config.toml` or `.mcp.json`) runs a program or sends
the conversation's tool calls somewhere: the key is security-relevant and applies only once the
repository is trusted (agent/trust.py). What lifts the questions or the sandbox (`ask`,
`allow_tools`, `sandbox`) comes only from the user's own config (`USER_ONLY_SERVER_KEYS`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from ctxagent.context.errors import ConfigError, ToolError
from ctxagent.context.floor import bounded_json
from ctxagent.context.floor.beneath import read_small
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

MCP_JSON = ".mcp.json"
MAX_MCP_JSON_BYTES = 1_000_000
# Keys of a server that take a safeguard away: from the user's own config only, never a repository's.
USER_ONLY_SERVER_KEYS = ("ask", "allow_tools", "sandbox")
TOOL_PREFIX = "mcp__"


def is_mcp_tool(name: str) -> bool:
    """An outside server's tool (`mcp__<server>__<tool>`)."""
    return name.startswith(TOOL_PREFIX)
NAME_LIMIT = 64  # the providers' tool-name limit (OpenAI: 64 characters of [A-Za-z0-9_-])
_NAME_SAFE = re.compile(r"[^A-Za-z0-9_-]+")

Seconds = Annotated[float, Field(gt=0, le=3600)]


class McpServerConfig(BaseModel):
    """One server. Exactly one of `command` (stdio) and `url` (Streamable HTTP)."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)  # added to the sandbox's allowlisted environment
    cwd: str | None = None  # relative to the repository root
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    bearer_token_env_var: str | None = None
    enabled: bool = True
    enabled_tools: list[str] | None = None  # None: every tool the server lists
    disabled_tools: list[str] = Field(default_factory=list)
    startup_timeout: Seconds = Field(default=10.0, validation_alias=AliasChoices("startup_timeout", "startup_timeout_sec"))
    tool_timeout: Seconds = Field(default=120.0, validation_alias=AliasChoices("tool_timeout", "tool_timeout_sec"))
    # user config only (USER_ONLY_SERVER_KEYS): each call asks like `shell` unless lifted here
    ask: bool = True
    allow_tools: list[str] = Field(default_factory=list)  # tools of this server that never ask
    sandbox: bool = True  # a local server runs in the commands' sandbox

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("a server needs exactly one of `command` (stdio) or `url` (Streamable HTTP)")
        if self.url and not re.match(r"https?://", self.url):
            raise ValueError(f"url must start with http:// or https://, got {self.url!r}")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"

    def keeps(self, tool: str) -> bool:
        """Whether the server's tool `tool` is offered (enabled_tools / disabled_tools)."""
        if self.enabled_tools is not None and tool not in self.enabled_tools:
            return False
        return tool not in self.disabled_tools

    def asks(self, tool: str) -> bool:
        return self.ask and tool not in self.allow_tools


def read_mcp_json(root: Path) -> dict[str, Any]:
    """The servers of the project's `.mcp.json` (`{"mcpServers": {NAME: {...}}}`), in config.toml's
    shape: `type` http/sse → `url` (+ `headers`); otherwise `command`, `args`, `env`. A missing file
    is no servers; a damaged one is a ConfigError naming it."""
    path = Path(root) / MCP_JSON
    try:  # repository content: no link is followed, and a FIFO or a device is refused, not read
        data = bounded_json.loads(read_small(root, MCP_JSON, MAX_MCP_JSON_BYTES).decode("utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, ToolError) as exc:  # bad JSON, too deep (TooDeepError), not UTF-8
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return {}
    out: dict[str, Any] = {}
    for name, spec in servers.items():
        if not isinstance(spec, dict):
            raise ConfigError(f"invalid {path}: mcpServers.{name} must be an object")
        kind = spec.get("type", "http" if "url" in spec else "stdio")
        keep = ("url", "headers") if kind in ("http", "streamable-http", "sse") else ("command", "args", "env", "cwd")
        # Claude Code's other keys (oauth, headersHelper, …) have no meaning here
        out[name] = {k: v for k, v in spec.items() if k in keep}
    return out


def safe_part(name: str) -> str:
    return _NAME_SAFE.sub("_", name).strip("_") or "x"


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, in the characters and the length every provider takes."""
    full = f"{TOOL_PREFIX}{safe_part(server)}__{safe_part(tool)}"
    if len(full) <= NAME_LIMIT:
        return full
    import hashlib

    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return full[:NAME_LIMIT - 9] + "_" + digest


def server_of(name: str) -> str | None:
    """The (safe) server part of an `mcp__server__tool` name; None for any other tool."""
    if not name.startswith(TOOL_PREFIX):
        return None
    rest = name[len(TOOL_PREFIX):]
    return rest.split("__", 1)[0] if "__" in rest else None
