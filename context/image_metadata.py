"""An image's metadata dropped, its pixels kept byte for byte: what is stored and sent is the picture.

A PNG's text chunks (`tEXt`, `zTXt`, `iTXt`), its `eXIf`, a JPEG's APPn segments (EXIF, XMP,
Photoshop IRB, ICC profiles) and comments, a WEBP's `EXIF` / `XMP ` chunks and a GIF's comment and
application extensions carry text that no redaction reads (a key typed into a PNG's `Comment`, a
GPS position, an author's name). They went into `.ctxagent/spill/*.img` and to the provider as they
were. `strip_metadata` keeps only what draws the picture — a list of what to keep, so an unknown or
private chunk is dropped too — and copies the compressed pixel data (IDAT, the JPEG scans and their
tables, the WEBP bitstream, the GIF's frames) without touching it. One thing of the metadata
is kept: a JPEG's EXIF orientation (a photo would show on its side), written back as a
minimal EXIF holding that one tag. Colour profiles (iCCP, APP2 ICC_PROFILE, ICCP) can carry text
too and are dropped: the picture is read as sRGB.

Bytes this cannot walk (cut, malformed) are returned unchanged: load_image has already checked the
header, and the provider decides about the rest, as it did before.
"""

from __future__ import annotations

import struct

__all__ = ["strip_metadata"]

# PNG chunks that draw the picture (critical ones, transparency, colour and gamma, animation frames)
_PNG_KEEP = frozenset({b"IHDR", b"PLTE", b"IDAT", b"IEND", b"tRNS", b"gAMA", b"cHRM", b"sRGB", b"sBIT", b"pHYs",
                       b"bKGD", b"acTL", b"fcTL", b"fdAT"})
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_EXIF = b"Exif\x00\x00"
_ORIENTATION = 0x0112


class _Malformed(Exception):
    pass


def strip_metadata(data: bytes, media_type: str) -> bytes:
    """`data` without its metadata (see the module doc); unchanged when there is none or it cannot be walked."""
    strip = {"image/png": _png, "image/jpeg": _jpeg, "image/webp": _webp, "image/gif": _gif}.get(media_type)
    if strip is None:
        return data
    try:
        return strip(data)
    except (_Malformed, struct.error, IndexError):
        return data


# --- PNG ------------------------------------------------------------------------------------------------


def _png(data: bytes) -> bytes:
    if not data.startswith(_PNG_MAGIC):
        raise _Malformed
    out = [_PNG_MAGIC]
    i = len(_PNG_MAGIC)
    while i < len(data):
        (length,) = struct.unpack(">I", data[i:i + 4])
        kind = data[i + 4:i + 8]
        end = i + 12 + length
        if end > len(data):
            raise _Malformed
        if kind in _PNG_KEEP:
            out.append(data[i:end])
        if kind == b"IEND":
            break
        i = end
    else:
        raise _Malformed  # no IEND: a cut file is left as it is
    return b"".join(out)


# --- JPEG -----------------------------------------------------------------------------------------------

# markers without a length: SOI, EOI, TEM, RST0-7
_NO_LENGTH = frozenset({0xD8, 0xD9, 0x01, *range(0xD0, 0xD8)})
_SOS, _EOI, _APP0, _APP1, _APP14, _COM = 0xDA, 0xD9, 0xE0, 0xE1, 0xEE, 0xFE


def _jpeg_keeps(marker: int, body: bytes) -> bool:
    """Tables, frame and scan headers and restart intervals draw the picture; of the APPn segments
    only JFIF (APP0) and Adobe's colour transform (APP14) do; comments and every other APPn do not."""
    if marker == _APP0:
        return body.startswith((b"JFIF\x00", b"JFXX\x00"))
    if marker == _APP14:
        return body.startswith(b"Adobe")
    return not (0xE0 <= marker <= 0xEF or marker == _COM)


def _jpeg(data: bytes) -> bytes:
    if not data.startswith(b"\xff\xd8"):
        raise _Malformed
    out = [b"\xff\xd8"]
    orientation: int | None = None
    i = 2
    while i < len(data):
        if data[i] != 0xFF:
            raise _Malformed
        marker = data[i + 1]
        if marker == 0xFF:  # fill
            i += 1
            continue
        if marker in _NO_LENGTH:
            out.append(data[i:i + 2])
            i += 2
            if marker == _EOI:
                break
            continue
        (length,) = struct.unpack(">H", data[i + 2:i + 4])
        end = i + 2 + length
        if length < 2 or end > len(data):
            raise _Malformed
        body = data[i + 4:end]
        if marker == _APP1 and body.startswith(_EXIF) and orientation is None:
            orientation = _tiff_orientation(body[len(_EXIF):])
            if orientation not in (None, 1):
                out.append(_exif_segment(orientation))
        if _jpeg_keeps(marker, body):
            out.append(data[i:end])
        i = end
        if marker == _SOS:  # the entropy-coded scan runs to the next marker that is not RSTn or a stuffed 0
            j = i
            while True:
                j = data.index(b"\xff", j)
                following = data[j + 1]
                if following == 0x00 or 0xD0 <= following <= 0xD7:
                    j += 2
                    continue
                if following == 0xFF:
                    j += 1
                    continue
                break
            out.append(data[i:j])
            i = j
    else:
        raise _Malformed
    return b"".join(out)


def _tiff_orientation(tiff: bytes) -> int | None:
    """The Orientation tag of a TIFF structure's first IFD (EXIF), or None."""
    order = {b"II": "<", b"MM": ">"}.get(tiff[:2])
    if order is None:
        return None
    (first,) = struct.unpack(order + "I", tiff[4:8])
    (count,) = struct.unpack(order + "H", tiff[first:first + 2])
    for n in range(min(count, 512)):
        at = first + 2 + 12 * n
        tag, kind = struct.unpack(order + "HH", tiff[at:at + 4])
        if tag == _ORIENTATION and kind == 3:  # SHORT
            (value,) = struct.unpack(order + "H", tiff[at + 8:at + 10])
            return value if 1 <= value <= 8 else None
    return None


def _exif_segment(orientation: int) -> bytes:
    """An APP1 EXIF segment holding only the orientation."""
    tiff = b"MM\x00\x2a" + struct.pack(">I", 8) + struct.pack(">H", 1) + \
        struct.pack(">HHIHH", _ORIENTATION, 3, 1, orientation, 0) + struct.pack(">I", 0)
    body = _EXIF + tiff
    return b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body


# --- WEBP -----------------------------------------------------------------------------------------------

_WEBP_DROP = frozenset({b"EXIF", b"XMP ", b"ICCP"})
_VP8X_ICC, _VP8X_EXIF, _VP8X_XMP = 0x20, 0x08, 0x04


def _webp(data: bytes) -> bytes:
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        raise _Malformed
    chunks = []
    i = 12
    while i < len(data):
        kind = data[i:i + 4]
        (size,) = struct.unpack("<I", data[i + 4:i + 8])
        end = i + 8 + size + (size & 1)
        if i + 8 + size > len(data):
            raise _Malformed
        chunk = data[i:min(end, len(data))]
        if kind == b"VP8X":
            flags = chunk[8] & ~(_VP8X_ICC | _VP8X_EXIF | _VP8X_XMP)
            chunk = chunk[:8] + bytes([flags]) + chunk[9:]
        if kind not in _WEBP_DROP:
            chunks.append(chunk)
        i = end
    body = b"WEBP" + b"".join(chunks)
    return b"RIFF" + struct.pack("<I", len(body)) + body


# --- GIF ------------------------------------------------------------------------------------------------

_GIF_APP_KEEP = (b"NETSCAPE2.0", b"ANIMEXTS1.0")  # looping: how the frames play


def _gif_sub_blocks(data: bytes, i: int) -> int:
    """The index after the data sub-blocks starting at `i` (each a length byte, the last one 0)."""
    while True:
        size = data[i]
        i += 1 + size
        if size == 0:
            return i


def _gif(data: bytes) -> bytes:
    if data[:6] not in (b"GIF87a", b"GIF89a"):
        raise _Malformed
    flags = data[10]
    i = 13 + (3 * 2 ** ((flags & 7) + 1) if flags & 0x80 else 0)
    out = [data[:i]]
    while True:
        block = data[i]
        if block == 0x3B:  # trailer
            out.append(data[i:i + 1])
            return b"".join(out)
        if block == 0x2C:  # an image: descriptor, local colour table, LZW code size, data
            local = data[i + 9]
            start = i
            i += 10 + (3 * 2 ** ((local & 7) + 1) if local & 0x80 else 0) + 1
            i = _gif_sub_blocks(data, i)
            out.append(data[start:i])
        elif block == 0x21:
            label = data[i + 1]
            start = i
            i = _gif_sub_blocks(data, i + 2)
            ident = data[start + 3:start + 14]
            if label == 0xF9 or (label == 0xFF and ident in _GIF_APP_KEEP):  # graphic control (timing, transparency)
                out.append(data[start:i])
        else:
            raise _Malformed

