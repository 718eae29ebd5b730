"""JSON from a model, a tool, a server or a log line, parsed with a bound on its nesting.

`json.loads` gives up near 1,000 levels with a RecursionError that no caller expects, and what it
does return can still break what comes after: pydantic serialises at most about 255 levels
("Maximum serialization depth exceeded" took `ctxagent -p` down, rc 1, on a 300-deep tool call),
and every recursive walk (sanitizing, escaping, rendering) spends stack on it. `loads` refuses both
with a `TooDeepError` — a ValueError, like any other JSON that will not do — so each caller's
handling of bad JSON covers it. MAX_DEPTH is far above what any tool's arguments need and far below
both limits; a session-log line or a JSON-RPC message holds such arguments a few levels down
(LOG_DEPTH, MESSAGE_DEPTH).

`toml_loads` is the same bound for TOML: `tomllib` recurses once per nested array or inline table
and dies near 1,000 levels with a RecursionError (a 200 kB `x = [[[…]]]` in a repository's
`.ctxagent/config.toml` took `ctxagent config`, `doctor` and `-p` down with a traceback).
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

MAX_DEPTH = 64  # levels of arrays and objects in a tool call's arguments, a model's or a tool's JSON, a config file
LOG_DEPTH = 2 * MAX_DEPTH  # a session-log line: an event around such arguments
MESSAGE_DEPTH = LOG_DEPTH  # a JSON-RPC message (ACP, MCP): an envelope around such arguments


KEPT = 2_000  # characters of too-deep JSON kept (in a refused tool call): 200,000 levels are 400k characters
_CLIPPED = re.compile(r"… \[[0-9,]+ more characters not kept: (.{1,200})\]\Z")


class TooDeepError(ValueError):
    """JSON nested deeper than its bound."""


def depth_over(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when `value` (parsed JSON: dicts, lists, tuples, scalars) nests more than `limit` levels."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list | tuple))
    return False


def loads(text: str | bytes, limit: int = MAX_DEPTH) -> Any:
    """`json.loads(text)`, or a TooDeepError when it nests more than `limit` levels (any other bad
    JSON raises json's own ValueError)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeepError(f"the JSON nests more than {limit} levels") from None
    if depth_over(value, limit):
        raise TooDeepError(f"the JSON nests more than {limit} levels")
    return value


def toml_loads(text: str, limit: int = MAX_DEPTH) -> dict[str, Any]:
    """`tomllib.loads(text)`, or a TooDeepError when it nests more than `limit` levels (any other bad
    TOML raises tomllib's own TOMLDecodeError, a ValueError too)."""
    try:
        value = tomllib.loads(text)
    except RecursionError:
        raise TooDeepError(f"the TOML nests more than {limit} levels") from None
    if depth_over(value, limit):
        raise TooDeepError(f"the TOML nests more than {limit} levels")
    return value


def clipped(text: str, why: str) -> str:
    """`text` cut to KEPT characters, ending with what was cut and why (`problem` reads it back)."""
    if len(text) <= KEPT:
        return text
    return f"{text[:KEPT]}… [{len(text) - KEPT:,} more characters not kept: {why}]"


def problem(text: str) -> str:
    """What is wrong with `text` as a JSON object, in a few words ("" when nothing is)."""
    cut = _CLIPPED.search(text)
    if cut is not None:
        return cut.group(1)
    try:
        value = loads(text)
    except TooDeepError as exc:
        return str(exc)
    except ValueError as exc:
        return f"not valid JSON ({exc})"
    return "" if isinstance(value, dict) else f"a JSON {type(value).__name__}, not an object"
