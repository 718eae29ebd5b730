"""A `session/prompt`'s content blocks as the one line of text a ctxagent turn takes.

- text: as it is;
- a file of the repository — a `resource_link`, or an embedded `resource` whose URI is a file — is
  attached as `@path`, the app's own attachment (agent/user_tools.py: one `read_file` call before the
  first step, so the same confinement, size cap and binary handling apply; with the client's file
  system that read is the editor's buffer);
- an embedded text resource that is not a file of the repository (another scheme, a path outside it,
  a name `@` cannot spell) is inlined, capped, with its URI;
- an image (base64 data, a PNG, JPEG, GIF or WEBP by its bytes within the limits: context/images.py)
  goes with the message as an attachment (`prompt_content`; the agent keeps its bytes in the
  attachment store) — an unusable one is left out with the reason;
- audio and binary resources are not sent; a note in the message says what was left out.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

if TYPE_CHECKING:
    from ctxagent.context.images import Image

INLINE_CHARS = 100_000  # of an embedded resource that is not a repository file
_MENTIONABLE = set("\t\n\r `'\"<>()[]{},;@")  # characters agent/user_tools.py MENTION stops at


def file_of(root: Path, uri: str) -> str | None:
    """The repository-relative path a file URI (or a plain path) names, when `@path` can attach it."""
    from ctxagent.tools.confine import relative
    from ctxagent.tui.acp.tool_view import inside

    parsed = urlparse(uri)
    if parsed.scheme not in ("file", ""):
        return None
    raw = unquote(parsed.path if parsed.scheme == "file" else uri)
    path = inside(root, raw)
    if path is None or not path.is_file():
        return None
    rel = relative(root, path)
    return rel if not any(c in _MENTIONABLE or c.isspace() for c in rel) else None


def prompt_text(root: Path, blocks: list[Any]) -> str:
    """The text of a turn from ACP content blocks (see the module's note)."""
    return prompt_content(root, blocks)[0]


def _image(block: Any, left_out: list[str]) -> Image | None:
    from ctxagent.context.images import ImageError, load_image

    try:
        image = load_image(base64.b64decode(str(getattr(block, "data", "") or ""), validate=True), "prompt image")
    except (binascii.Error, ValueError, ImageError) as exc:
        left_out.append(f"an image ({exc})")
        return None
    return image


def prompt_content(root: Path, blocks: list[Any]) -> tuple[str, list[Image]]:
    """The text of a turn and the images pasted with it, from ACP content blocks (the module's note)."""
    images: list[Image] = []
    parts: list[str] = []
    mentions: list[str] = []
    left_out: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            rel = file_of(root, block.uri)
            if rel is not None:
                mentions.append(rel)
            else:
                parts.append(f"[linked: {block.uri}]")
        elif kind == "resource":
            resource = block.resource
            rel = file_of(root, resource.uri)
            text = getattr(resource, "text", None)
            if rel is not None:
                mentions.append(rel)
            elif isinstance(text, str):
                shown = text if len(text) <= INLINE_CHARS else text[:INLINE_CHARS] + f"\n[… cut at {INLINE_CHARS:,} characters]"
                parts.append(f"<resource uri={resource.uri!r}>\n{shown}\n</resource>")
            else:
                left_out.append(f"binary resource {resource.uri}")
        elif kind == "image":
            image = _image(block, left_out)
            if image is not None:
                images.append(image)
        elif kind == "audio":
            left_out.append("audio")
    text = "\n".join(p for p in parts if p)
    new = [m for m in dict.fromkeys(mentions) if f"@{m}" not in text.split()]
    if new:
        text = (text + "\n\n" if text else "") + " ".join(f"@{m}" for m in new)
    if left_out:
        text += f"\n\n[not attached: {', '.join(left_out)}]"
    return text, images
