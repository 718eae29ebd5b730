"""Tools the user calls straight from the prompt, through the same path as the model's own calls.

- `@path` in a message attaches a file: before the turn's first step, one `read_file` call per path
  that names a file of the repository — the model's own read_file, so the same confinement, size cap
  and binary handling apply (a mention of something else, `@decorator` or an e-mail, is left alone).
- a path alone on the input that names an image file of the repository (pasted or dropped into the
  prompt: `pasted_image`) is sent as its `@path` mention, so the image is attached the same way.
- `!command` is a turn of its own: a `shell` call. The user typed it, so it is not asked (agent/
  permissions.py `must_ask`), but it runs in the sandbox like any command, takes the code checkpoint
  first, and its output joins the context like any tool result — with no model call.

Both are logged as an assistant event with `direct: true` (no model call, no usage) holding the
calls, then their results; the model sees them in the next request as calls already made. Their
call ids start with DIRECT_CALL_PREFIX, which is how a UI tells them from the model's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctxagent.context.events import AssistantData
    from ctxagent.context.request import ToolCall

DIRECT_CALL_PREFIX = "direct-"
MAX_MENTIONS = 10
MENTION = re.compile(r"(?:^|(?<=\s))@([^\s@`'\"<>()\[\]{},;]+)")
TRAILING = ".,;:!?。，；：！？"


def mentioned_files(root: Path, text: str) -> list[str]:
    """Repository-relative paths of the regular files `text` mentions as `@path`, in order, once each.
    Paths outside the repository (`@../x`, `@/etc/passwd`, a symlink out) are not files of it."""
    return scan_mentions(root, text)[0]


def scan_mentions(root: Path, text: str) -> tuple[list[str], list[str]]:
    """(the files `text` attaches as `@path`, as `mentioned_files`; what is said about the mentions
    that attach nothing — no such file, not a file of the repository, past MAX_MENTIONS — so that
    none is dropped without a word)."""
    from ctxagent.context.errors import ToolError
    from ctxagent.context.floor.beneath import check_regular
    from ctxagent.tools.confine import walk_repo

    found: list[str] = []
    missing: list[str] = []
    over = 0
    for m in MENTION.finditer(text):
        raw = m.group(1).rstrip(TRAILING)
        if not raw:
            continue
        if len(found) >= MAX_MENTIONS:
            over += 1
            continue
        rel = None
        try:  # the boundary every tool uses; read_file itself reads it the same way
            with walk_repo(root, raw) as entry:
                if entry.st is not None:
                    check_regular(entry.st, raw)  # the refusals of read_file: FIFOs, devices, hard links
                    rel = entry.rel
        except (ToolError, OSError):
            rel = None
        if rel is None:
            if raw not in missing:
                missing.append(raw)
        elif rel not in found:
            found.append(rel)
    notes = [f"@{flat_mention(raw)}: not attached — no such file in this repository (the text is sent as typed)"
             for raw in missing]
    if over:
        notes.append(f"only the first {MAX_MENTIONS} @files are attached; {over} more not")
    return found, notes


def flat_mention(raw: str, limit: int = 80) -> str:
    """A mention as said back to the user: one line, shortened."""
    one = " ".join(raw.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def pasted_image(root: Path, text: str) -> str | None:
    """The repository-relative path of the image file that `text` is, alone (a path pasted or dropped
    into the prompt: quoted, backslash-escaped, a `file://` URL, relative or absolute inside the repository),
    when it can be mentioned as `@path`; None for anything else. An image by its bytes (context/images.py)."""
    from urllib.parse import unquote, urlparse

    from ctxagent.context.errors import ToolError
    from ctxagent.context.floor.beneath import check_regular, read_regular
    from ctxagent.context.images import sniff
    from ctxagent.tools.confine import walk_repo

    raw = text.strip()
    if not raw or "\n" in raw or len(raw) > 4096:
        return None
    if len(raw) > 1 and raw[0] == raw[-1] and raw[0] in "'\"":
        raw = raw[1:-1]
    if raw.startswith("file://"):
        raw = unquote(urlparse(raw).path)
    raw = re.sub(r"\\(.)", r"\1", raw)  # a terminal's `my\ shot.png`
    try:
        with walk_repo(root, raw) as entry:
            if entry.st is None:
                return None
            check_regular(entry.st, raw)
            rel, head = entry.rel, read_regular(entry, raw, limit=16)
    except (ToolError, OSError, ValueError):
        return None
    if sniff(head) is None or MENTION.fullmatch(f"@{rel}") is None:
        return None
    return rel


def direct_calls(turn: int, calls: list[tuple[str, dict[str, object]]]) -> list[ToolCall]:
    # imported here, not at the top: the app's chat reads only DIRECT_CALL_PREFIX before its first frame
    from ctxagent.context.request import ToolCall

    return [ToolCall(id=f"{DIRECT_CALL_PREFIX}{turn}-{i}", name=name, arguments=dict(args))
            for i, (name, args) in enumerate(calls)]


def direct_calls_event(calls: list[ToolCall], step: int, turn: int) -> AssistantData:
    """The assistant event that carries the user's own calls (no model call: no usage, `direct`)."""
    from ctxagent.context.events import AssistantData

    return AssistantData(text="", tool_calls=calls,
                         stop_reason="tool_use", step=step, turn=turn, partial=False, direct=True)
