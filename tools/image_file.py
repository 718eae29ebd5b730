"""read_file of an image (PNG, JPEG, GIF, WEBP by its bytes, never its name): an attachment.

When the session's model takes images (`ToolServices.images`: agent/providers/registry.py
`takes_images`) the result carries the image (`ToolResult.images`, checked by context/images.py) and
one line of text saying what it is; the agent stores its bytes in the session's attachment store and
the log holds a reference. Otherwise read_file describes it as a binary file the model cannot see. Over the limits (5 MB,
8000 px a side) or damaged: a clear error. `@shot.png` is a read_file call (agent/user_tools.py), so
it attaches the same way.
"""

from __future__ import annotations

from typing import Any, BinaryIO

from ctxagent.context.errors import ToolError
from ctxagent.context.images import MAX_IMAGE_BYTES, describe, load_image, sniff, too_large
from ctxagent.tools.confine import quote
from ctxagent.tools.contract import ToolContext, ToolResult

__all__ = ["read_image", "sniff"]


def read_image(fh: BinaryIO, sample: bytes, size: int, shown: str, ctx: ToolContext) -> ToolResult:
    """An image file, for a model that takes images: attached (a line of text says what it is). Too
    large or damaged: a clear error. (For one that takes none, read_file describes it as binary.)"""
    media_type = sniff(sample) or ""
    kind = media_type.split("/")[-1].upper()
    meta: dict[str, Any] = {"files": [shown], "image": True, "size": size, "type": media_type}
    over = too_large(size)
    if over:
        raise ToolError(f"{quote(shown)} is a {kind} image too large to attach: {over}")
    image = load_image(sample + fh.read(MAX_IMAGE_BYTES + 1 - len(sample)), shown)
    what = describe(image.media_type, image.width, image.height, image.size)
    return ToolResult(f"[image {shown}: {what} — attached below]", meta=meta, images=[image])
