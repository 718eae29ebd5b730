"""The `read_spill` tool: page or grep a tool output that was spilled to `.ctxagent/spill/`."""

from __future__ import annotations

from typing import Any

from ctxagent.context.errors import ToolError
from ctxagent.context.spill import SpillStore
from ctxagent.tools.base import FunctionTool, ToolContext, ToolResult

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "handle": {"type": "string", "description": "The handle shown in the cut marker (read_spill handle=…)."},
        "offset": {"type": "integer", "description": "First line to show (0-based), or first match with grep. Default 0."},
        "limit": {"type": "integer", "description": "How many lines (or matches) to show. Default 200, max 2000."},
        "grep": {"type": "string", "description": "Regular expression (or literal text) to search for instead of paging."},
    },
    "required": ["handle"],
}

DESCRIPTION = (
    "Read a large tool output that was cut to head and tail in the conversation. Page through it by "
    "line (offset, limit) or search it (grep, a regex or literal text); lines are numbered."
)


def _store(ctx: ToolContext) -> SpillStore:
    store = ctx.services.get("spill")
    if isinstance(store, SpillStore):
        return store
    return SpillStore.for_root(ctx.root)


def run_read_spill(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    try:
        text = _store(ctx).read(
            str(args["handle"]),
            offset=int(args.get("offset") or 0),
            limit=int(args.get("limit") or 200),
            grep=args.get("grep") or None,
        )
    except ToolError as exc:
        return ToolResult(f"error: {exc}", is_error=True)
    return ToolResult(text, meta={"spill_handle": str(args["handle"])})


def make_read_spill_tool() -> FunctionTool:
    return FunctionTool(name="read_spill", description=DESCRIPTION, schema=SCHEMA, permission="read", fn=run_read_spill)


READ_SPILL = make_read_spill_tool()
