"""The `read_spill` tool: page or grep a tool output that was spilled to `.ctxagent/spill/`."""

from __future__ import annotations

from ctxagent.context.floor.bounded_regex import MATCH_SECONDS
from ctxagent.context.spill import SpillStore
from ctxagent.tools.contract import FunctionTool, ToolArgs, ToolContext, ToolResult
from pydantic import Field


class ReadSpillArgs(ToolArgs):
    schema_closed = False  # see ToolArgs
    handle: str = Field(description="The handle shown in the cut marker (read_spill handle=…).")
    offset: int | None = Field(None, description="First line to show (0-based), or first match with grep. Default 0.")
    limit: int | None = Field(None, description="How many lines (or matches) to show. Default 200, max 2000.")
    grep: str | None = Field(None, description="Regular expression (or literal text) to search for instead of paging.")


DESCRIPTION = (
    "Read a large tool output that was cut to head and tail in the conversation. Page through it by "
    "line (offset, limit) or search it (grep, a regex or literal text); lines are numbered."
)


def _store(ctx: ToolContext) -> SpillStore:
    return ctx.services.spill or SpillStore.for_root(ctx.root)


def run_read_spill(args: ReadSpillArgs, ctx: ToolContext) -> ToolResult:
    text = _store(ctx).read(args.handle, offset=args.offset or 0, limit=args.limit or 200, grep=args.grep or None,
                            seconds=float(ctx.config.get("regex_seconds") or MATCH_SECONDS))
    return ToolResult(text, meta={"spill_handle": args.handle})


def make_read_spill_tool() -> FunctionTool[ReadSpillArgs]:
    return FunctionTool("read_spill", DESCRIPTION, ReadSpillArgs, "read", run_read_spill)


READ_SPILL = make_read_spill_tool()
