"""How one of ctxagent's tool calls looks to an ACP client: kind, title, locations, content, diffs.

ACP's tool kinds (read, edit, delete, move, search, execute, think, fetch, switch_mode, other) let a
client pick an icon and decide what to show; `TOOL_KINDS` maps every ctxagent tool, and a tool it
does not name (an MCP tool, a new one) is "other" — or, by its permission class, "edit" / "execute".
An edit's result carries its unified diff in `meta["diff"]` (tools/files.py); `diff_contents` turns
each hunk into ACP's diff content (path, old text, new text).

Paths shown to the client are absolute (ACP's locations are), and only paths inside the repository
are shown: an argument naming `../../etc/passwd` gets no location.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp.schema import ContentToolCallContent, FileEditToolCallContent, ToolCallLocation, ToolKind
    from ctxagent.agent.updates import PermissionRequest
    from ctxagent.tools.contract import FileAccess

TOOL_KINDS: dict[str, ToolKind] = {
    "read_file": "read", "list_files": "read", "read_spill": "read", "read_event": "read",
    "git_status": "read", "git_diff": "read",
    "grep": "search", "search_memory": "search",
    "edit_file": "edit", "write_file": "edit",
    "shell": "execute", "run_tests": "execute",
    "store_memory": "think", "summarize_context": "think",
    "context_status": "read", "compact_context": "think", "handoff": "think",
}
RESULT_SHOWN_CHARS = 8000  # of a tool's output, in the client's tool card (the model gets the full result)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def tool_kind(name: str, permission: str = "") -> ToolKind:
    kind = TOOL_KINDS.get(name)
    if kind is not None:
        return kind
    return "edit" if permission == "edit" else "execute" if permission == "command" else "other"


def title(name: str, args: dict[str, Any]) -> str:
    """`read_file calc.py`, `shell: pytest -q`, `grep "TODO"`: the tool and what it is about."""
    for key in ("command", "path", "pattern", "query", "handle", "event_id"):
        value = args.get(key)
        if value not in (None, ""):
            shown = " ".join(str(value).split())
            shown = shown if len(shown) <= 120 else shown[:119] + "…"
            return f"{name}: {shown}" if key == "command" else f"{name} {shown}"
    return name


def inside(root: Path, rel: object) -> Path | None:
    """The absolute path of `rel` when it names something inside the repository (else None)."""
    from ctxagent.context.errors import ToolError
    from ctxagent.tools.confine import resolve_in_repo

    if not isinstance(rel, str) or not rel:
        return None
    try:
        return resolve_in_repo(root, rel)
    except (ToolError, OSError, ValueError):
        return None


def locations(root: Path, args: dict[str, Any], meta: dict[str, Any] | None = None) -> list[ToolCallLocation]:
    """Where a call reads or writes: its path argument (at start_line), or the files and changed
    line ranges its result names."""
    from acp.schema import ToolCallLocation

    out: list[ToolCallLocation] = []
    seen: set[tuple[str, int | None]] = set()

    def add(rel: object, line: object = None) -> None:
        path = inside(root, rel)
        if path is None:
            return
        at = line if isinstance(line, int) and line >= 1 else None
        if (str(path), at) not in seen:
            seen.add((str(path), at))
            out.append(ToolCallLocation(path=str(path), line=at))

    meta = meta or {}
    found = meta.get("lines")
    lines: dict[str, Any] = found if isinstance(found, dict) else {}
    for rel, ranges in lines.items():
        for span in ranges if isinstance(ranges, list) else []:
            if isinstance(span, list) and span:
                add(rel, span[0])
    for rel in meta.get("files") or []:
        if not any(loc.path == str(inside(root, rel)) for loc in out):
            add(rel, (meta.get("lines_shown") or [None])[0])
    if not out:
        add(args.get("path"), args.get("start_line"))
    return out


def text_content(text: str) -> ContentToolCallContent:
    from acp.helpers import text_block, tool_content

    if len(text) > RESULT_SHOWN_CHARS:
        text = text[:RESULT_SHOWN_CHARS] + f"\n[… {len(text) - RESULT_SHOWN_CHARS:,} more characters; the model saw them all]"
    return tool_content(text_block(text))


def diff_contents(root: Path, diff: str) -> list[FileEditToolCallContent]:
    """Each hunk of a unified diff (tools/textfile.py `unified_diff`) as ACP diff content. A created
    file (`--- /dev/null`) has no old text. A hunk's body is read by the line counts in its `@@`
    header, so a removed line that reads "-- x" is not taken for a file header."""
    from acp.helpers import tool_diff_content

    out: list[FileEditToolCallContent] = []
    path: Path | None = None
    created = pending = False
    old: list[str] = []
    new: list[str] = []
    left = right = 0  # lines of the current hunk still to come, old side and new side
    last = ""  # the sign of the previous body line: a "\ No newline" marker is about that line alone

    def emit() -> None:
        nonlocal pending
        if pending and path is not None:
            out.append(tool_diff_content(str(path), "".join(new), None if created else "".join(old)))
        pending = False

    for line in diff.splitlines(keepends=True):
        sign = line[:1]
        if sign == "\\" and last:
            for side in {" ": (old, new), "-": (old,), "+": (new,)}.get(last, ()):
                if side and side[-1].endswith("\n"):
                    side[-1] = side[-1][:-1]
            continue
        if (left > 0 or right > 0) and sign in (" ", "-", "+"):
            (new if sign == "+" else old).append(line[1:])
            if sign == " ":
                new.append(line[1:])
            left -= sign != "+"
            right -= sign != "-"
            last, pending = sign, True
            continue
        emit()
        left = right = 0
        last = ""
        hunk = _HUNK.match(line)
        if line.startswith("--- "):
            created, path = line.startswith("--- /dev/null"), None
        elif line.startswith("+++ "):
            name = line[4:].strip()
            path = inside(root, name[2:] if name.startswith("b/") else name)
        elif hunk is not None:
            left, right = int(hunk.group(2) or 1), int(hunk.group(4) or 1)
            old, new = [], []
    emit()
    return out


def permission_content(root: Path, req: PermissionRequest, files: FileAccess | None = None) -> list[Any]:
    """What the user is asked about: the edit as a diff, the command line, or the tool's preview.
    `files`: where the file a write_file replaces is read (the editor's buffer with the client's fs)."""
    from acp.helpers import tool_diff_content

    args = req.arguments
    path = inside(root, args.get("path"))
    if req.tool == "edit_file" and path is not None:
        return [tool_diff_content(str(path), str(args.get("new_text", "")), str(args.get("old_text", "")))]
    if req.tool == "write_file" and path is not None:
        return [tool_diff_content(str(path), str(args.get("content", "")), _current_text(path, files))]
    if req.permission == "command":
        return [text_content(f"```sh\n{req.preview}\n```")]
    return [text_content(req.preview or json.dumps(args, ensure_ascii=False)[:2000])]


def _current_text(path: Path, files: FileAccess | None) -> str | None:
    """The file a write_file replaces, for the diff the user approves (None: it is new or unreadable)."""
    from ctxagent.tools.confine import stat_regular_file
    from ctxagent.tools.contract import LOCAL_FILES

    try:
        stat_regular_file(path, path.name)
        with (files or LOCAL_FILES).open_read(path) as fh:
            return fh.read(RESULT_SHOWN_CHARS * 25).decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - absent, a FIFO, unreadable: the approval shows the new text alone
        return None


def finished_content(root: Path, name: str, content: str, is_error: bool, meta: dict[str, Any]) -> list[Any]:
    """A finished call's card: the diff hunks of an edit, else (and for errors) its output, with the
    images it attached (`meta["images"]`: references into the attachment store) as image content."""
    diff = meta.get("diff")
    hunks = diff_contents(root, diff) if isinstance(diff, str) and diff and not is_error else []
    return hunks or [text_content(content), *image_contents(root, meta.get("images"))]


def image_contents(root: Path, refs: Any) -> list[ContentToolCallContent]:
    """The images a result attached, read back from the session's attachment store (one that cannot
    be read is left out: the text above already says what it was)."""
    import base64

    from acp.helpers import image_block, tool_content
    from ctxagent.context.errors import CtxagentError
    from ctxagent.context.images import IMAGE_SUFFIX
    from ctxagent.context.spill import SpillStore

    out: list[ContentToolCallContent] = []
    store = SpillStore.for_root(root)
    for ref in refs if isinstance(refs, list) else []:
        try:
            data = store.get_blob(str(ref.get("handle", "")), IMAGE_SUFFIX)
        except (CtxagentError, AttributeError):
            continue
        out.append(tool_content(image_block(base64.b64encode(data).decode("ascii"), str(ref.get("media_type")))))
    return out
