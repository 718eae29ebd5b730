"""Real image bytes for the image tests: PNGs made with zlib (valid, decodable); a JPEG, GIF and WEBP
header each, made the way their formats say."""

from __future__ import annotations

import struct
import sys
import zlib
from typing import Any


def png(width: int = 4, height: int = 3, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A real RGB PNG of `width` × `height` (one colour)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" + bytes(rgb) * width
    raw = zlib.compress(row * height)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def jpeg(width: int = 640, height: int = 480) -> bytes:
    """A JPEG's markers up to its frame header (SOI, APP0, SOF0) and an end: enough to be sniffed and sized."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


def gif(width: int = 10, height: int = 20) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00" + b";"


def webp(width: int = 300, height: int = 200) -> bytes:
    """A lossless (VP8L) WEBP header."""
    bits = (width - 1) | ((height - 1) << 14)
    body = b"WEBP" + b"VP8L" + struct.pack("<I", 5) + b"\x2f" + bits.to_bytes(4, "little")
    return b"RIFF" + struct.pack("<I", len(body)) + body


def e2e() -> Any:
    """tests/e2e/conftest.py's module (loaded once by tests/images/conftest.py)."""
    return sys.modules["e2e_fixtures"]
