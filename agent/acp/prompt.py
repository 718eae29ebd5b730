"""A `session/prompt`'s content blocks as the one line of text a ctxagent turn takes.

- text: as it is;
- a file of the repository — a `resource_link`, or an embedded `resource` whose URI is a file — is
  attached as `@path`, the app's own attachment (agent/user_tools.py: one `read_file` call before the
  first step, so the same confinement, size cap and binary handling apply; with the client's file
  system that read is the editor's buffer);
- an embedded text resource that is not a file of the repository (another scheme, a path outside it,
  a name `@` cannot spell) is inlined, capped, with its URI;
- images and audio are not sent (the providers' requests carry text: ctxagent advertises neither),
  binary resources neither; a note in the message says what was left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

INLINE_CHARS = 100_000  # of an embedded resource that is not a repository file
_MENTIONABLE = set("\t\n\r `'\"<>()[]{},;@")  # characters agent/user_tools.py MENTION stops at


def file_of(root: Path, uri: str) -> str | None:
    """The repository-relative path a file URI (or a plain path) names, when `@path` can attach it."""
    from ctxagent.agent.acp.tool_view import inside
    from ctxagent.tools.confine import relative

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
        elif kind in ("image", "audio"):
            left_out.append(f"an {kind}" if kind == "image" else "audio")
    text = "\n".join(p for p in parts if p)
    new = [m for m in dict.fromkeys(mentions) if f"@{m}" not in text.split()]
    if new:
        text = (text + "\n\n" if text else "") + " ".join(f"@{m}" for m in new)
    if left_out:
        text += f"\n\n[not attached: {', '.join(left_out)} — ctxagent sends text only]"
    return text
