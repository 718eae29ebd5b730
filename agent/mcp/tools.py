"""An MCP server's tool as one of ctxagent's tools (`McpTool`), and its answer as a `ToolResult`.

A tool is named `mcp__<server>__<tool>` (agent/mcp/config.py `tool_name`: unique; a name cleaned for
the providers carries a digest of the server's, and its description then says the server's own name).
It asks like `shell` (permission "command": an outside tool can do anything) unless the user's own
config lifts it for the server (`ask = false`) or the tool (`allow_tools`). Its description and schema
are the server's words — untrusted input, shown as data and capped. The answer's content blocks become text:
text as is, a resource's text under its URI, a resource link as one line, `structuredContent` as
JSON when no text block carries it. An image is attached for the model to see (`ToolResult.images`,
context/images.py) when the model takes images and the bytes are a PNG, JPEG, GIF or WEBP within the
limits; otherwise it, like an audio clip, is a line saying what came back (its type, its size and a
handle: the bytes are kept in the spill store). The result then goes the way of every tool's (agent/tool_calls.py): sanitize, spill,
log, prune. `isError` is a tool error for the model.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any

import mcp_types as types
from ctxagent.agent.mcp.config import renamed_note, tool_name
from ctxagent.context.images import Image, ImageError, describe, load_image
from ctxagent.context.request import ToolSpec
from ctxagent.tools.contract import Permission, ToolContext, ToolResult
from ctxagent.tools.safe_text import clean_result

if TYPE_CHECKING:
    from ctxagent.agent.mcp.client import McpHub

MAX_DESCRIPTION_CHARS = 2000  # a server's description is its author's text, sent at every step


def spec_of(server: str, tool: types.Tool) -> ToolSpec:
    """The schema the model is shown for `tool` of `server`."""
    description = clean_result(tool.description or tool.title or tool.name)
    if len(description) > MAX_DESCRIPTION_CHARS:
        description = description[:MAX_DESCRIPTION_CHARS].rstrip() + " …"
    schema = dict(tool.input_schema or {})
    if schema.get("type") != "object":
        schema = {"type": "object", "properties": {}}
    schema.setdefault("properties", {})
    note = clean_result(renamed_note(server, tool.name))
    return ToolSpec(tool_name(server, tool.name), f"[{server}] {note}{description}", schema)


class McpTool:
    """One tool of one server, called through the hub."""

    def __init__(self, hub: McpHub, server: str, remote: str, spec: ToolSpec, *, asks: bool = True):
        self.hub, self.server, self.remote = hub, server, remote
        self.name, self.description, self.schema = spec.name, spec.description, spec.input_schema
        self.permission: Permission = "command" if asks else "read"

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.schema)

    def must_ask(self, args: Any) -> bool:
        return False

    def _remote_name(self) -> str:
        """The server's own name of the tool (a resumed session knows only the safe name it sent)."""
        state = self.hub.state_of(self.server)
        for tool in state.tools if state is not None else []:
            if tool_name(self.server, tool.name) == self.name:
                return tool.name
        return self.remote

    def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        if not isinstance(args, dict):
            return ToolResult(f"error: arguments must be a JSON object, got {type(args).__name__}", is_error=True)
        state = self.hub.state_of(self.server)
        if state is not None and state.state == "ready" and not any(
                tool_name(self.server, t.name) == self.name for t in state.tools):
            # its schema stays in the list (agent/mcp/catalog.py says why); the server is not asked
            return ToolResult(f"error: {self.name}: the MCP server {self.server!r} does not offer this tool any more "
                              "(it is not in the server's current tool list); do not call it again",
                              is_error=True, meta={"mcp": {"server": self.server, "tool": self.remote}})
        outcome = self.hub.call(self.server, self._remote_name(), args, ctx.cancel)
        if outcome.result is None:
            return ToolResult(f"error: {self.name}: {outcome.error}", is_error=True,
                              meta={"mcp": {"server": self.server, "tool": self.remote}})
        return render_result(outcome.result, ctx, self.server, self.remote)


def _size_of_base64(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data) * 3 // 4


def _keep_bytes(ctx: ToolContext, mime: str, data: str) -> str:
    """A handle for media the model is not sent: the data URL in the spill store (read_spill)."""
    spill = ctx.services.spill
    if spill is None:
        return "(not kept)"
    try:
        return spill.put(f"data:{mime};base64,{data}")
    except Exception:  # a full disk: the line still says what came back
        return "(not kept: the spill store could not write it)"


def _attach(block: types.ImageContent, ctx: ToolContext, images: list[Image]) -> str | None:
    """An image the model can see (it takes images, and the bytes are a PNG/JPEG/GIF/WEBP within the
    limits): added to `images`, with the line the text carries; None: the stub path below."""
    if not ctx.services.images:
        return None
    try:
        image = load_image(base64.b64decode(block.data, validate=True), "")
    except (binascii.Error, ValueError, ImageError) as exc:  # bad base64; not an image we send, too large
        return f"[an image returned by the tool could not be attached: {exc}]"
    images.append(image)
    return f"[image returned by the tool: {describe(image.media_type, image.width, image.height, image.size)} — attached]"


def render_result(result: types.CallToolResult, ctx: ToolContext, server: str, tool: str) -> ToolResult:
    parts: list[str] = []
    media: list[dict[str, Any]] = []
    images: list[Image] = []
    has_text = False
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
            has_text = True
        elif isinstance(block, types.ImageContent) and (line := _attach(block, ctx, images)) is not None:
            parts.append(line)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            kind = "image" if isinstance(block, types.ImageContent) else "audio"
            size = _size_of_base64(block.data)
            handle = _keep_bytes(ctx, block.mime_type, block.data)
            media.append({"kind": kind, "mime": block.mime_type, "bytes": size, "handle": handle})
            parts.append(f"[{kind} returned by the tool: {block.mime_type}, {size:,} bytes, kept as spill {handle}; "
                         f"this connection does not send {kind}s to the model]")
        elif isinstance(block, types.EmbeddedResource):
            res = block.resource
            if isinstance(res, types.TextResourceContents):
                parts.append(f"[resource {res.uri}]\n{res.text}")
                has_text = True
            else:
                size = _size_of_base64(res.blob)
                handle = _keep_bytes(ctx, res.mime_type or "application/octet-stream", res.blob)
                parts.append(f"[resource {res.uri}: {res.mime_type or 'binary'}, {size:,} bytes, kept as spill {handle}]")
        elif isinstance(block, types.ResourceLink):
            about = f" — {block.description}" if block.description else ""
            parts.append(f"[resource link: {block.uri} ({block.name}){about}]")
        else:
            parts.append(f"[{getattr(block, 'type', 'content')} block not shown]")
    if result.structured_content is not None and not has_text:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1, default=str))
    text = "\n".join(parts) if parts else "(the tool returned no content)"
    meta: dict[str, Any] = {"mcp": {"server": server, "tool": tool}}
    if media:
        meta["mcp"]["media"] = media
    if result.is_error:
        return ToolResult(f"error: {text}", is_error=True, meta=meta, images=images)
    return ToolResult(text, meta=meta, images=images)
