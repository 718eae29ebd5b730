"""The images a request to the loopback model server carries, read from either wire format.

    Anthropic: {"type": "image", "source": {"type": "base64", "media_type": ..., "data": ...}} in a
               user message's content or inside a tool_result's content
    OpenAI:    {"type": "image_url", "image_url": {"url": "data:<media type>;base64,..."}} in a user
               message's content

Each is decoded and checked as the providers check theirs: the bytes must be a PNG, JPEG, GIF or
WEBP (context/images.py, by the magic bytes) whose type is the one declared; anything else is a 400,
as the real APIs answer. The server records what it saw with the request (`images`), and a turn's
text may say so: `{images}` in it becomes "image/png 4x3 (user), ..." or "no images" — so the
scripted model can see that it got an image. The deterministic prompt count counts an image by its
provider's token rule, not its base64 (`without_image_data`).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from ctxagent.context.images import ANTHROPIC, OPENAI, ImageError, image_tokens, load_image

PLACEHOLDER = "{images}"


@dataclass(frozen=True)
class SeenImage:
    media_type: str
    width: int
    height: int
    size: int
    where: str  # "user" | "tool_result"

    def describe(self) -> str:
        return f"{self.media_type} {self.width}x{self.height} ({self.where})"

    def record(self) -> dict[str, Any]:
        return {"media_type": self.media_type, "width": self.width, "height": self.height, "size": self.size,
                "where": self.where}


def _check(media_type: str, data: str, where: str) -> SeenImage:
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError, TypeError) as e:
        raise ValueError(f"an image's base64 data is invalid: {e}") from e
    try:
        image = load_image(raw)
    except ImageError as e:
        raise ValueError(f"an image is not usable: {e}") from e
    if image.media_type != media_type:
        raise ValueError(f"an image declared {media_type} is {image.media_type} by its bytes")
    return SeenImage(image.media_type, image.width, image.height, image.size, where)


def _anthropic_block(block: Any, where: str, out: list[SeenImage]) -> None:
    if not isinstance(block, dict):
        return
    if block.get("type") == "image":
        source = block.get("source")
        if not isinstance(source, dict) or source.get("type") != "base64":
            raise ValueError("an image block needs a base64 source")
        out.append(_check(str(source.get("media_type")), str(source.get("data", "")), where))
    elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
        for inner in block["content"]:
            _anthropic_block(inner, "tool_result", out)


def _openai_part(part: Any, out: list[SeenImage]) -> None:
    if not isinstance(part, dict) or part.get("type") != "image_url":
        return
    url = str((part.get("image_url") or {}).get("url", ""))
    head, sep, data = url.partition(",")
    if not (sep and head.startswith("data:") and head.endswith(";base64")):
        raise ValueError("an image_url must be a base64 data URI (the scripted server fetches nothing)")
    out.append(_check(head[len("data:"):-len(";base64")], data, "user"))


def seen_images(fmt: str, body: dict[str, Any]) -> list[SeenImage]:
    """Every image in the request, in order; ValueError for a malformed one."""
    out: list[SeenImage] = []
    for m in body.get("messages") or []:
        if not isinstance(m, dict) or not isinstance(m.get("content"), list):
            continue
        if m.get("role") == "tool" and any(isinstance(p, dict) and p.get("type") != "text" for p in m["content"]):
            raise ValueError("a tool message's content takes text parts only")
        for block in m["content"]:
            if fmt == "anthropic":
                _anthropic_block(block, "user", out)
            else:
                _openai_part(block, out)
    return out


def say_images(text: str, images: list[SeenImage]) -> str:
    """A turn's text with PLACEHOLDER replaced by what the request carried."""
    if PLACEHOLDER not in text:
        return text
    return text.replace(PLACEHOLDER, ", ".join(i.describe() for i in images) if images else "no images")


def _dims(media_type: str, data: str) -> tuple[int, int]:
    try:
        image = load_image(base64.b64decode(data))
    except (ImageError, binascii.Error, ValueError):
        return 1, 1
    return image.width, image.height


def without_image_data(value: Any) -> tuple[Any, int]:
    """`value` (a request body) with each image's data left out, and what its images cost by their
    provider's token rule: the deterministic prompt count must not count base64 as text."""
    if isinstance(value, list):
        pairs = [without_image_data(v) for v in value]
        return [p[0] for p in pairs], sum(p[1] for p in pairs)
    if not isinstance(value, dict):
        return value, 0
    if value.get("type") == "image" and isinstance(value.get("source"), dict):
        src = value["source"]
        w, h = _dims(str(src.get("media_type")), str(src.get("data", "")))
        return {**value, "source": {**src, "data": ""}}, image_tokens(w, h, ANTHROPIC)
    if value.get("type") == "image_url" and isinstance(value.get("image_url"), dict):
        head, _, data = str(value["image_url"].get("url", "")).partition(",")
        w, h = _dims(head, data)
        return {**value, "image_url": {**value["image_url"], "url": head}}, image_tokens(w, h, OPENAI)
    out: dict[str, Any] = {}
    total = 0
    for k, v in value.items():
        out[k], n = without_image_data(v)
        total += n
    return out, total
