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

A server's `env` may not hold a variable that runs code its command line does not show (LD_PRELOAD,
BASH_ENV, NODE_OPTIONS, PYTHONPATH, GIT_CONFIG_*, …: context/floor/program_env.py), from any config,
the user's own included and whatever `sandbox` says: the error names the server, the key and the
variable, and how to set one on purpose (in the command line, where it is seen).

A tool's name as the model sees it is `mcp__<server>__<tool>` (`tool_name`) in the characters and
the length every provider takes. A server or tool name already in those characters is used as it is;
any other is cleaned and given a digest of the original (`a.b` → `a_b_3f2c1e`), so two names never
meet after cleaning (`a.b` and `a_b` stay two tools) whatever else the server lists, in any order,
in this session and the next; such a tool's description and `/mcp` say the server's own name.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Annotated, Any

from ctxagent.context.errors import ConfigError, ToolError
from ctxagent.context.floor import bounded_json
from ctxagent.context.floor.beneath import read_small
from ctxagent.context.floor.program_env import program_env_problem
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

MCP_JSON = ".mcp.json"
MAX_MCP_JSON_BYTES = 1_000_000
# Keys of a server that take a safeguard away: from the user's own config only, never a repository's.
USER_ONLY_SERVER_KEYS = ("ask", "allow_tools", "sandbox")
TOOL_PREFIX = "mcp__"


NAME_LIMIT = 64  # the providers' tool-name limit (OpenAI: 64 characters of [A-Za-z0-9_-])
_NAME_SAFE = re.compile(r"[^A-Za-z0-9_-]+")
_CLEAN_TOOL = re.compile(r"[A-Za-z0-9_-]+")
_CLEAN_SERVER = re.compile(r"[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*")  # no `__`: it separates the parts
MAX_NAME_SHOWN = 120  # characters of a server's own tool name quoted in a description


def is_mcp_tool(name: str) -> bool:
    """An outside server's tool (`mcp__<server>__<tool>`)."""
    return name.startswith(TOOL_PREFIX)


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

    @field_validator("env")
    @classmethod
    def _env_runs_no_code(cls, env: dict[str, str]) -> dict[str, str]:
        problem = program_env_problem(env)
        if problem is not None:
            raise ValueError(problem)
        return env

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


def read_mcp_json(root: Path, raw: bytes | None = None) -> dict[str, Any]:
    """The servers of the project's `.mcp.json` (`{"mcpServers": {NAME: {...}}}`), in config.toml's
    shape: `type` http/sse → `url` (+ `headers`); otherwise `command`, `args`, `env`. A missing file
    is no servers; a damaged one is a ConfigError naming it. `raw`: its bytes, already read (those
    whose digest trust checks: agent/trust.py)."""
    path = Path(root) / MCP_JSON
    try:  # repository content: no link is followed, and a FIFO or a device is refused, not read
        data = bounded_json.loads((raw if raw is not None else read_small(root, MCP_JSON, MAX_MCP_JSON_BYTES)).decode("utf-8"))
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


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def server_part(server: str) -> str:
    """A server's part of its tools' names: its name when already clean, else cleaned (no `__`) and
    suffixed with a digest of the name."""
    if _CLEAN_SERVER.fullmatch(server):
        return server
    return f"{re.sub('_{2,}', '_', safe_part(server))}_{_digest(server)[:6]}"


def tool_part(tool: str) -> str:
    """A tool's part of its name: the server's name for it when already clean, else cleaned and
    suffixed with a digest of the server's name for it."""
    return tool if _CLEAN_TOOL.fullmatch(tool) else f"{safe_part(tool)}_{_digest(tool)[:6]}"


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, in the characters and the length every provider takes, and unique:
    two different (server, tool) pairs never get one name (see the module doc)."""
    full = f"{TOOL_PREFIX}{server_part(server)}__{tool_part(tool)}"
    if len(full) <= NAME_LIMIT:
        return full
    return full[:NAME_LIMIT - 9] + "_" + _digest(server, tool)[:8]


def renamed_note(server: str, tool: str) -> str:
    """A note for the tool's description naming the server's own name for it; empty when the model
    sees it under that name."""
    if tool_name(server, tool) == f"{TOOL_PREFIX}{server_part(server)}__{tool}":
        return ""
    return f"(renamed: the server calls this tool {tool[:MAX_NAME_SHOWN]!r}) "  # repr: controls escaped


def server_of(name: str) -> str | None:
    """The server part (`server_part`) of an `mcp__server__tool` name; None for any other tool."""
    if not name.startswith(TOOL_PREFIX):
        return None
    rest = name[len(TOOL_PREFIX):]
    return rest.split("__", 1)[0] if "__" in rest else None
