"""Text across the tool boundary: never crash on it, in either direction.

A file name need not be UTF-8 (`caf\\xe9.txt`); Python gives it to us with the byte as a lone
surrogate ("\\udce9"), which no log line, database row or terminal can encode. A model's JSON can
carry a lone surrogate too ("\\ud800"). The rule, applied by `ToolRegistry.run` to every call:

- arguments (`clean_args`): a surrogate that stands for a byte (\\udc80-\\udcff) is kept, so a path
  or a command still names the same bytes; any other lone surrogate becomes U+FFFD.
- results (`clean_result`): a byte shows as the four characters `\\xNN` (`caf\\xe9.txt`), anything
  else undecodable as U+FFFD; `unescape_name` turns a `\\xNN` name the model gives back into the
  real one, so the file can be read, edited and diffed like any other.
"""

from __future__ import annotations

import re
from typing import Any

from ctxagent.context.floor.sanitize import escape_surrogates

_NOT_A_BYTE = re.compile(r"[\ud800-\udc7f\udd00-\udfff]")
_BYTE_ESCAPE = re.compile(r"\\x([89a-fA-F][0-9a-fA-F])")


def _map_strings(value: Any, fn: Any) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {_map_strings(k, fn): _map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fn) for v in value]
    if isinstance(value, tuple):
        return tuple(_map_strings(v, fn) for v in value)
    return value


def _arg_text(text: str) -> str:
    return _NOT_A_BYTE.sub("\ufffd", text) if _NOT_A_BYTE.search(text) else text


def clean_args(args: Any) -> Any:
    """A call's arguments with every lone surrogate that is not an escaped byte replaced."""
    return _map_strings(args, _arg_text)


def clean_result(value: Any) -> Any:
    """A result's text (or a structure of it) that can always be encoded as UTF-8."""
    return _map_strings(value, escape_surrogates)


def unescape_name(name: str) -> str:
    """The file name a shown `\\xNN` name stands for (the inverse of `clean_result` for names)."""
    return _BYTE_ESCAPE.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), name)
