"""Text files as the edit tools see them: binary sniffing, lossless decoding, atomic writes, diffs.

A file is decoded so that writing it back changes only what was edited: a UTF-8 BOM or a UTF-16
encoding is kept, CRLF line endings are kept (the model works in LF, as read_file shows it), and
bytes that are not valid UTF-8 survive as surrogate escapes. (Writes: tools/atomic_write.py.)
"""

from __future__ import annotations

import codecs
import difflib
import mimetypes
from dataclasses import dataclass

from ctxagent.context.errors import ToolError
from ctxagent.tools.confine import quote

SNIFF_BYTES = 8192  # how much of a file decides "binary or text"
DIFF_MAX_INPUT = 2_000_000  # characters (before + after) above which no line diff is computed

_MAGIC: list[tuple[bytes, str]] = [
    (b"\x89PNG\r\n\x1a\n", "PNG image"), (b"\xff\xd8\xff", "JPEG image"), (b"GIF8", "GIF image"),
    (b"%PDF", "PDF document"), (b"PK\x03\x04", "ZIP archive"), (b"\x1f\x8b", "gzip archive"),
    (b"\x7fELF", "ELF executable"), (b"SQLite format 3\x00", "SQLite database"), (b"BZh", "bzip2 archive"),
    (b"\xfd7zXZ\x00", "xz archive"), (b"7z\xbc\xaf\x27\x1c", "7-Zip archive"), (b"\x00asm", "WebAssembly module"),
    (b"\xca\xfe\xba\xbe", "Java class or Mach-O file"), (b"MZ", "Windows executable"), (b"RIFF", "RIFF media file"),
]
_BOMS: list[tuple[bytes, str]] = [(codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")]

# --- sniffing and text formats -------------------------------------------------------------------


@dataclass
class TextFormat:
    """How a text file is stored, so an edit writes it back the same way."""

    encoding: str = "utf-8"
    bom: bytes = b""
    crlf: bool = False


def binary_kind(sample: bytes, name: str) -> str | None:
    """A description if `sample` (the file's first bytes) looks binary, else None."""
    if any(sample.startswith(bom) for bom, enc in _BOMS if enc.startswith("utf-16")):
        return None
    for magic, kind in _MAGIC:
        if sample.startswith(magic) and (b"\x00" in sample or magic not in (b"MZ", b"BZh", b"RIFF")):
            return kind
    if b"\x00" in sample:
        return mimetypes.guess_type(name)[0] or "binary data"
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(sample)
    if not text:
        return None
    odd = sum(1 for ch in text if ch == "\ufffd" or (ch < " " and ch not in "\t\n\r\f\b\x1b"))
    return (mimetypes.guess_type(name)[0] or "binary data") if odd / len(text) > 0.3 else None


def sniff_encoding(sample: bytes) -> tuple[str, bytes]:
    for bom, enc in _BOMS:
        if sample.startswith(bom):
            return enc, bom
    return "utf-8", b""


def binary_message(shown: str, kind: str, size: int, verb: str) -> str:
    return (f"error: {quote(shown)} is a binary file ({kind}, {size:,} bytes); {verb}. "
            f"Use shell (e.g. `file {shown}` or `xxd {shown} | head`) if you need to inspect its bytes.")


def decode_for_edit(data: bytes, shown: str) -> tuple[str, TextFormat]:
    """Decode a file for editing, losslessly: bytes that are not UTF-8 survive as surrogate escapes."""
    kind = binary_kind(data[:SNIFF_BYTES], shown)
    if kind:
        raise ToolError(binary_message(shown, kind, len(data), "refusing to edit it as text").removeprefix("error: "))
    enc, bom = sniff_encoding(data)
    try:
        text = data[len(bom):].decode(enc, "surrogateescape" if enc == "utf-8" else "strict")
    except UnicodeDecodeError as exc:
        raise ToolError(f"{quote(shown)} is not valid {enc} text ({exc.reason}); refusing to edit it") from exc
    crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
    return (text.replace("\r\n", "\n") if crlf else text), TextFormat(enc, bom, crlf)


def encode_text(text: str, fmt: TextFormat) -> bytes:
    if fmt.crlf:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    try:
        body = text.encode(fmt.encoding, "surrogateescape")
    except UnicodeEncodeError:  # e.g. a lone surrogate sent by the model: keep the rest intact
        body = text.encode(fmt.encoding, "replace")
    return fmt.bom + body


# --- diffs and changed ranges --------------------------------------------------------------------


def _range(start: int, stop: int) -> str:
    length = stop - start
    if length == 1:
        return f"{start + 1}"
    return f"{start + 1 if length else start},{length}"


def unified_diff(rel: str, before: str, after: str, created: bool) -> tuple[str, list[list[int]]]:
    """A unified diff of two texts plus the changed line ranges (1-based, inclusive) in `after`."""
    b_lines = after.splitlines(keepends=True)
    if len(before) + len(after) > DIFF_MAX_INPUT:
        return (f"(diff not computed: the file is too large; {before.count(chr(10)):,} lines before, "
                f"{after.count(chr(10)):,} lines after)"), [[1, max(len(b_lines), 1)]]
    a_lines = before.splitlines(keepends=True)
    sm = difflib.SequenceMatcher(None, a_lines, b_lines)
    top = max(len(b_lines), 1)
    ranges = [[min(j1 + 1, top), min(max(j2, j1 + 1), top)] for tag, _i1, _i2, j1, j2 in sm.get_opcodes() if tag != "equal"]
    out = [f"--- {'/dev/null' if created else 'a/' + rel}\n", f"+++ b/{rel}\n"]
    for group in sm.get_grouped_opcodes(3):
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + s for s in a_lines[i1:i2]]
                continue
            out += ["-" + s for s in a_lines[i1:i2]]
            out += ["+" + s for s in b_lines[j1:j2]]
    text = "".join(s if s.endswith("\n") else s + "\n\\ No newline at end of file\n" for s in out)
    return (text if len(out) > 2 else ""), ranges
