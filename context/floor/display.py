"""The display edge: text that reaches a terminal, with nothing in it hidden and nothing interpreted.

Everything displayed — model text, tool output, memory records, file names, session ids, paths —
may come from an untrusted repository or a confused model. An ESC sequence in it could move the
cursor, hide part of a command in the permission box (`curl … | sh;\\x1b[1K ls -la` shows as
`ls -la`), set the window title or write the clipboard (OSC 52). A bidi override (U+202E) makes
`exe.txt` of `txt.exe`; zero-width characters make two different names look the same; a lone
surrogate cannot even be encoded. `for_display` is the one function that decides what of a text
reaches the screen, and every printer goes through it: the CLI (`echo`, `echo_json`), headless
output, and the app's safe text (tui/app/safe.py). `tests/test_display_edge.py` checks that no CLI
module prints around it.

- C0/C1 control characters and escape sequences: removed in flowing text (a sequence is formatting,
  not content; a bare carriage return would let later text overwrite earlier text, "\\r\\n" becomes
  "\\n"); with `exact=True` — what the user must judge or find (the permission box, file names) —
  every one is shown instead (ESC as "␛", others as "^X" or "\\x9b"). Tab and newline stay.
- Invisible format characters — bidi embeddings, overrides and isolates, zero-width spaces and
  joiners, tag characters, line/paragraph separators, fillers — and lone surrogates: always shown as
  `⟨U+202E⟩`, in both modes, so what is displayed is what is there.
- `colors=True` (flowing text that ctxagent itself colored, the replay's picture): SGR sequences
  (`ESC [ … m`, colors and bold only) are kept; every other sequence and control still goes.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, TextIO

# ESC [ … final byte (CSI); ESC ] … BEL or ST (OSC); ESC P/X/^/_ … ST (DCS, SOS, PM, APC);
# the 8-bit forms of the same introducers (0x9b CSI, 0x9d OSC, 0x90/0x98/0x9e/0x9f strings);
# then any other two-byte ESC sequence.
_SEQUENCES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
_CONTROL_CLASS = r"\x00-\x08\x0b-\x1f\x7f-\x9f"
_CONTROLS = re.compile(f"[{_CONTROL_CLASS}]")
# Unicode's format characters (category Cf), the line and paragraph separators (Zl, Zp), the
# combining grapheme joiner and the Hangul fillers (letters that draw nothing), and the surrogates.
_INVISIBLE_CLASS = (
    "\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
    "\ud800-\udfff"
)
_INVISIBLE = re.compile(f"[{_INVISIBLE_CLASS}]")
_SGR = re.compile(r"\x1b\[[0-9;:]*m")  # select graphic rendition: colors, bold; it moves nothing
_ANY = re.compile(f"[{_CONTROL_CLASS}{_INVISIBLE_CLASS}]")


def _visible_control(ch: str) -> str:
    code = ord(ch)
    if ch == "\x1b":
        return "␛"
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code == 0x7F:
        return "^?"
    return f"\\x{code:02x}"


def _visible_format(m: re.Match[str]) -> str:
    return f"⟨U+{ord(m.group(0)):04X}⟩"


def for_display(text: str, *, exact: bool = False, colors: bool = False) -> str:
    """THE display edge: `text` as it may reach a terminal (see the module doc for the two modes)."""
    if not text or not _ANY.search(text):
        return text
    if colors and not exact:  # the text between two color sequences, each made safe on its own
        pieces, sgrs = _SGR.split(text), _SGR.findall(text)
        return "".join(for_display(piece) + (sgrs[i] if i < len(sgrs) else "") for i, piece in enumerate(pieces))
    if exact:
        text = _CONTROLS.sub(lambda m: _visible_control(m.group(0)), text)
    elif _CONTROLS.search(text):
        text = _CONTROLS.sub("", _SEQUENCES.sub("", text.replace("\r\n", "\n")))
    return _INVISIBLE.sub(_visible_format, text)


def strip_controls(text: str) -> str:
    """Flowing text (chat, answers, tables, messages): `for_display(text)`."""
    return for_display(text)


def show_controls(text: str) -> str:
    """What the user must judge or find (the permission box, file names): `for_display(text, exact=True)`."""
    return for_display(text, exact=True)


def _json_escape(m: re.Match[str]) -> str:
    data = m.group(0).encode("utf-16-le", "surrogatepass")  # an astral character is two escapes
    return "".join(f"\\u{int.from_bytes(data[i:i + 2], 'little'):04x}" for i in range(0, len(data), 2))


def json_text(value: Any, *, indent: int | None = None) -> str:
    """`value` as JSON for a terminal or a pipe: the same data (`json.loads` gives it back), with every
    character `for_display` would change written as a \\u escape — nothing raw reaches the screen, and
    a lone surrogate can always be encoded."""
    return _ANY.sub(_json_escape, json.dumps(value, ensure_ascii=False, indent=indent))


def echo(text: object = "", *, err: bool = False, file: TextIO | None = None, exact: bool = False,
         colors: bool = False, end: str = "\n") -> None:
    """Print `text` through the display edge: to stdout, or stderr with `err`, or `file`."""
    stream = file or (sys.stderr if err else sys.stdout)
    stream.write(for_display(str(text), exact=exact, colors=colors) + end)
    stream.flush()


def echo_json(value: Any, *, indent: int | None = 2, err: bool = False, file: TextIO | None = None) -> None:
    """Print `value` as JSON (`json_text`), one document and a newline."""
    stream = file or (sys.stderr if err else sys.stdout)
    stream.write(json_text(value, indent=indent) + "\n")
    stream.flush()


def plural(n: int, word: str, many: str | None = None) -> str:
    """"1 step", "2 steps": every count in CLI output goes through this."""
    return f"{n} {word if n == 1 else (many or word + 's')}"
