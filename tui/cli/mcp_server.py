"""`ctxagent mcp`: the project's memory and spill store as an MCP server over stdio.

Serves search_memory, store_memory, summarize_context and read_spill with the official `mcp` SDK
(`MCPServer`), so Claude Code, Codex and other agents share what ctxagent remembers. It opens the
same `<project>/.ctxagent/memory.db` the agent writes; SQLite WAL + IMMEDIATE transactions make
concurrent writers safe. Nothing may be printed to stdout but protocol messages; the text a tool
returns is stripped of control characters, since the client may show it in a terminal.

The repository is the one the `--project` folder (or the current one) is in, by the one rule
(context/floor/roots.py); a folder that can never be a root (the home folder, `/`, /tmp) is every
tool's error, said once on stderr too, so the client shows why. The state folder is checked like
every entry point checks it (context/floor/state_paths.py): a `.ctxagent/` ctxagent did not make,
or one git tracks, is refused with the reason as the tool's error, and the spill store opens its
files without following a link.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxagent.agent import __version__
from ctxagent.context.errors import CtxagentError
from ctxagent.context.floor.display import echo, strip_controls
from ctxagent.context.floor.roots import find_repo_root
from ctxagent.context.floor.state_paths import check_state_dir, spill_dir
from ctxagent.context.language.provenance import MCP
from ctxagent.context.memory import MemoryStore
from ctxagent.tools.memory_tools import search_memory, store_memory, summarize_context
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as MCPToolError

INSTRUCTIONS = """Shared memory of a ctxagent project: decisions, constraints, changes, todos and notes recorded
while coding in this repository. search_memory before re-deciding something; store_memory to record a decision or
constraint (a newer decision on the same subject supersedes the older). read_spill pages or greps large tool output
that was spilled to disk; its handle appears in the truncated output."""


def build_server(project: Path, *, session: str = "mcp", summarize: Any = None) -> MCPServer:
    """An MCPServer bound to the memory database and spill folder of the repository `project` is in
    (context/floor/roots.py: never the home folder, `/` or /tmp; a refusal is every tool's error)."""
    start = Path(project)
    roots: dict[str, Path] = {}
    state: dict[str, MemoryStore] = {}

    def root() -> Path:
        if "root" not in roots:
            roots["root"] = find_repo_root(start)
        return roots["root"]

    def store() -> MemoryStore:
        if "store" not in state:
            state["store"] = MemoryStore.open_project(root())  # checks (or makes) the state folder
        return state["store"]

    server: MCPServer = MCPServer("ctxagent-memory", instructions=INSTRUCTIONS, version=__version__)

    @server.tool(name="search_memory", description="Search the project's memory by words, identifiers or file names (English or Chinese). "
                             "layer: warm|cold; type: decision|constraint|change|todo|note|summary|spill.")
    def search_memory_tool(query: str, layer: str | None = None, type: str | None = None, limit: int = 8,
                           include_superseded: bool = False) -> str:
        try:
            return strip_controls(search_memory(store(), query, layer, type, limit, include_superseded)[0])
        except CtxagentError as exc:
            raise MCPToolError(str(exc)) from exc

    @server.tool(name="store_memory", description="Remember a decision, constraint, change, todo or note for later sessions and agents.")
    def store_memory_tool(content: str, type: str = "note", layer: str = "warm", tags: list[str] | None = None) -> str:
        try:
            return strip_controls(store_memory(store(), content, type, layer, tags, session=session, provenance=MCP)[0])
        except CtxagentError as exc:
            raise MCPToolError(str(exc)) from exc

    @server.tool(name="summarize_context", description="Summarize text into Decisions / Constraints / Changes / Open tasks (model-free).")
    def summarize_context_tool(text: str, max_tokens: int = 500) -> str:
        return strip_controls(summarize_context(text, max_tokens, summarize)[0])

    @server.tool(name="read_spill", description="Read spilled tool output by handle: page by lines (offset, limit) or grep a pattern.")
    def read_spill_tool(handle: str, offset: int = 0, limit: int = 200, grep: str | None = None) -> str:
        from ctxagent.context.spill import SpillStore

        try:
            check_state_dir(root())
            return strip_controls(SpillStore(spill_dir(root())).read(handle, offset=offset, limit=limit, grep=grep))
        except CtxagentError as exc:
            raise MCPToolError(str(exc)) from exc

    return server


def serve(project: Path) -> int:
    try:
        find_repo_root(project)
    except CtxagentError as exc:  # said once on stderr (the client's log); each tool answers with it
        echo(f"ctxagent mcp: {exc}", err=True)
    build_server(project).run("stdio")
    return 0
