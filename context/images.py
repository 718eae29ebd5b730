"""Images as attachments: what one is (by its magic bytes), its limits, and what it costs in tokens.

An image travels beside the text, never inside it: its bytes go to the session's attachment store
(the spill folder, `<sha256>.img`: `SpillStore.put_blob`), and the log's event carries an `ImageRef`
(context/events.py): media type, size, dimensions and the handle. The request carries an
`ImagePart` (context/request.py) per image, and the provider sends it as its wire's image block.

    image = load_image(data, "shot.png")    # ImageError: not PNG/JPEG/GIF/WEBP, too large, unreadable
    image_tokens(1920, 1080, "anthropic")   # 1568 × 882 after Anthropic's resize → 1845 → capped 1600
    image_tokens(1920, 1080, "openai")      # the tile rule: 85 + 170 × tiles

Only PNG, JPEG, GIF and WEBP are images here, decided by the bytes, never by the name. The limits
are the strictest of the providers' (Anthropic: 5 MB and 8000 px a side per image). An image's
metadata (PNG text chunks, EXIF, XMP, JPEG comments, …) is dropped when it is loaded and again when
it is stored, its pixels kept byte for byte (context/image_metadata.py): what is kept and sent is
the picture, never a key someone typed into its `Comment`.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxagent.context.errors import CtxagentError, ToolError
from ctxagent.context.events import ImageRef
from ctxagent.context.image_metadata import strip_metadata

if TYPE_CHECKING:
    from ctxagent.context.spill import SpillStore

MAX_IMAGE_BYTES = 5 * 1024 * 1024  # Anthropic's limit per image (base64 is larger still on the wire)
MAX_IMAGE_SIDE = 8000  # pixels, either side
MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
IMAGE_SUFFIX = ".img"  # an image's file in the attachment store: <sha256>.img

# the image-token rules, by provider name; a provider not named here is counted by DEFAULT_RULE
ANTHROPIC = "anthropic"
OPENAI = "openai"
DEFAULT_RULE = ANTHROPIC  # the larger count for the common sizes: the safe side for a budget
ANTHROPIC_LONG_EDGE = 1568  # an image whose long edge is over this is scaled down first
ANTHROPIC_MAX_TOKENS = 1600  # ... and so is one over ~1,600 tokens (≈ 1.15 megapixels)
OPENAI_BASE, OPENAI_TILE, OPENAI_TILE_SIDE = 85, 170, 512
OPENAI_FIT, OPENAI_SHORT = 2048, 768


class ImageError(ToolError):
    """Bytes that are no image this agent sends, or one over the limits: said plainly, never a crash."""


@dataclass(frozen=True)
class Image:
    """A checked image: its bytes, media type and dimensions."""

    data: bytes
    media_type: str
    width: int
    height: int
    name: str = ""

    @property
    def size(self) -> int:
        return len(self.data)


def sniff(data: bytes) -> str | None:
    """The media type the magic bytes say (PNG, JPEG, GIF, WEBP), or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill bytes
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2:i + 4])
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # a start of frame
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return width, height
        if length < 2:
            return None
        i += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30:
        w, h = struct.unpack("<HH", data[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return None


def dimensions(data: bytes, media_type: str) -> tuple[int, int] | None:
    """(width, height) read from the header, or None when the header is cut or malformed."""
    try:
        if media_type == "image/png" and len(data) >= 24 and data[12:16] == b"IHDR":
            w, h = struct.unpack(">II", data[16:24])
            return int(w), int(h)
        if media_type == "image/gif" and len(data) >= 10:
            w, h = struct.unpack("<HH", data[6:10])
            return int(w), int(h)
        if media_type == "image/jpeg":
            return _jpeg_size(data)
        if media_type == "image/webp":
            return _webp_size(data)
    except struct.error:
        return None
    return None


def too_large(size: int) -> str | None:
    """Why an image of `size` bytes is refused (before reading it all), or None."""
    if size > MAX_IMAGE_BYTES:
        return f"{size:,} bytes, over the {MAX_IMAGE_BYTES // (1024 * 1024)} MB an image may have"
    return None


def load_image(data: bytes, name: str = "") -> Image:
    """The checked image, its metadata dropped, or ImageError saying what is wrong (type, size, dimensions)."""
    shown = name or "the image"
    media_type = sniff(data)
    if media_type is None:
        raise ImageError(f"{shown} is not a PNG, JPEG, GIF or WEBP image (by its bytes)")
    over = too_large(len(data))
    if over:
        raise ImageError(f"{shown} is too large to attach: {over}")
    dims = dimensions(data, media_type)
    if dims is None or dims[0] < 1 or dims[1] < 1:
        raise ImageError(f"{shown} is a damaged {media_type.split('/')[1].upper()} (its size cannot be read)")
    if max(dims) > MAX_IMAGE_SIDE:
        raise ImageError(f"{shown} is {dims[0]}×{dims[1]} pixels, over the {MAX_IMAGE_SIDE} a side an image may have")
    return Image(strip_metadata(data, media_type), media_type, dims[0], dims[1], name)


# --- tokens ------------------------------------------------------------------------------------------


def anthropic_tokens(width: int, height: int) -> int:
    """Anthropic's rule: tokens ≈ width × height / 750, after the image is scaled down (aspect kept)
    so that its long edge is at most 1568 px and it costs at most ~1,600 tokens."""
    w, h = max(1, width), max(1, height)
    scale = min(1.0, ANTHROPIC_LONG_EDGE / max(w, h), math.sqrt(ANTHROPIC_MAX_TOKENS * 750 / (w * h)))
    w, h = max(1, int(w * scale)), max(1, int(h * scale))
    return min(ANTHROPIC_MAX_TOKENS, max(1, math.ceil(w * h / 750)))


def openai_tokens(width: int, height: int) -> int:
    """OpenAI's tile rule (detail "high", which "auto" may pick): fit in 2048 × 2048, scale the short
    side down to 768, then 85 + 170 per 512-px tile."""
    w, h = float(max(1, width)), float(max(1, height))
    fit = min(1.0, OPENAI_FIT / max(w, h))
    w, h = w * fit, h * fit
    short = min(1.0, OPENAI_SHORT / min(w, h))
    w, h = w * short, h * short
    tiles = math.ceil(w / OPENAI_TILE_SIDE) * math.ceil(h / OPENAI_TILE_SIDE)
    return OPENAI_BASE + OPENAI_TILE * tiles


RULES = {ANTHROPIC: anthropic_tokens, OPENAI: openai_tokens}


def image_tokens(width: int, height: int, rule: str | None = DEFAULT_RULE) -> int:
    """What one image costs the provider whose rule is `rule` (DEFAULT_RULE for any other)."""
    return RULES.get(rule or DEFAULT_RULE, RULES[DEFAULT_RULE])(width, height)


def rule_of(model: str) -> str:
    """The token rule of a "provider:model" name: its provider's, else DEFAULT_RULE."""
    provider = model.partition(":")[0] if ":" in model else ""
    return provider if provider in RULES else DEFAULT_RULE


# --- the text the model sees instead of an image ------------------------------------------------------


def describe(media_type: str, width: int, height: int, size: int) -> str:
    return f"{media_type.split('/')[-1].upper()} {width}×{height}, {size:,} bytes"


def image_stub(handle: str, media_type: str, width: int, height: int, size: int, *, why: str,
               again: str = "") -> str:
    """One line in place of an image the request does not carry: what it was, why, how to see it again."""
    back = f" — {again} shows it again" if again else ""
    return f"[image {handle} ({describe(media_type, width, height, size)}) {why}{back}]"


# --- the attachment store ------------------------------------------------------------------------------


def store_image(store: SpillStore, image: Image) -> ImageRef:
    """Put the image's bytes, without metadata, in the session's attachment store; the reference the log carries."""
    data = strip_metadata(image.data, image.media_type)  # an Image made without load_image too
    handle = store.put_blob(data, IMAGE_SUFFIX)
    return ImageRef(handle=handle, sha256=hashlib.sha256(data).hexdigest(), media_type=image.media_type,
                    size=len(data), width=image.width, height=image.height, name=image.name)


class ImageReader:
    """An image's bytes by handle from the attachment store, the last few kept (a request's body is
    made twice: to hash it, to send it). None for one that cannot be read (gone, refused)."""

    def __init__(self, store: SpillStore, keep: int = 8):
        self.store = store
        self.keep = keep
        self._kept: OrderedDict[str, bytes] = OrderedDict()

    def __call__(self, handle: str) -> bytes | None:
        if handle in self._kept:
            self._kept.move_to_end(handle)
            return self._kept[handle]
        try:
            data = self.store.get_blob(handle, IMAGE_SUFFIX)
        except CtxagentError:
            return None
        self._kept[handle] = data
        while len(self._kept) > self.keep:
            self._kept.popitem(last=False)
        return data
