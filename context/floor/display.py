"""Text that reaches a terminal: C0/C1 control characters removed (or made visible).

Everything displayed — model text, tool output, memory records, file names, session ids — may come
from an untrusted repository or a confused model. An ESC sequence in it could move the cursor, hide
part of a command in the permission box (`curl … | sh;\\x1b[1K ls -la` shows as `ls -la`), set the
window title or write the clipboard (OSC 52). Every display path runs its text through one of these
two functions; this module is the one place that rule lives.

- `strip_controls`: for ordinary display (chat, headless output, tables). Whole escape sequences
  (CSI, OSC, DCS/SOS/PM/APC strings, two-byte ESC sequences) are removed, then any remaining C0/C1
  control and DEL; tab and newline stay. A bare carriage return is dropped too (it would let later
  text overwrite earlier text on the same line), but "\\r\\n" becomes "\\n".
- `show_controls`: for what the user must judge before approving (the permission prompt): every
  control character is shown visibly (ESC as "␛", others as "^X" or "\\x9b"), so nothing is hidden.

Lone surrogates (from undecodable file names or a model's broken JSON) are replaced, so the text can
always be encoded for the terminal.
"""

from __future__ import annotations

import re

# ESC [ … final byte (CSI); ESC ] … BEL or ST (OSC); ESC P/X/^/_ … ST (DCS, SOS, PM, APC);
# the 8-bit forms of the same introducers (0x9b CSI, 0x9d OSC, 0x90/0x98/0x9e/0x9f strings);
# then any other two-byte ESC sequence.
_SEQUENCES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATES = re.compile(r"[\ud800-\udfff]")


def _no_surrogates(text: str) -> str:
    return _SURROGATES.sub("\ufffd", text) if _SURROGATES.search(text) else text


def strip_controls(text: str) -> str:
    """`text` without escape sequences or control characters (tab and newline kept)."""
    if not text:
        return text
    text = _no_surrogates(text)
    if not _CONTROLS.search(text):
        return text
    text = text.replace("\r\n", "\n")
    return _CONTROLS.sub("", _SEQUENCES.sub("", text))


def _visible(ch: str) -> str:
    code = ord(ch)
    if ch == "\x1b":
        return "␛"
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code == 0x7F:
        return "^?"
    return f"\\x{code:02x}"


def show_controls(text: str) -> str:
    """`text` with every control character made visible (tab and newline kept)."""
    if not text:
        return text
    text = _no_surrogates(text)
    return _CONTROLS.sub(lambda m: _visible(m.group(0)), text)


def plural(n: int, word: str, many: str | None = None) -> str:
    """"1 step", "2 steps": every count in CLI output goes through this."""
    return f"{n} {word if n == 1 else (many or word + 's')}"
