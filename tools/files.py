"""The file tools: read_file, write_file, edit_file, list_files.

Reading streams the file in chunks, so a 10 MB single-line file or a multi-gigabyte log gives a
bounded result; binary files are described, not dumped. Writing keeps a file's encoding (BOM,
UTF-16, bytes that are not valid UTF-8) and its CRLF line endings, replaces it atomically, and
returns a unified diff plus the changed line ranges that the memory layer records as a "change".
"""

from __future__ import annotations

import codecs
import difflib
from dataclasses import dataclass
from typing import Any, BinaryIO

from ctxagent.context.errors import ToolError
from ctxagent.context.floor.beneath import Entry, MissingDirectory
from ctxagent.context.floor.bounded_regex import MATCH_SECONDS
from ctxagent.tools.atomic_write import replace_in_repo
from ctxagent.tools.confine import (
    cap_text,
    open_in_repo,
    quote,
    read_entry,
    resolve_in_repo,
    walk_repo,
)
from ctxagent.tools.contract import FunctionTool, ToolArgs, ToolContext, ToolResult
from ctxagent.tools.image_file import read_image, sniff
from ctxagent.tools.listing import glob_matcher, list_repo_files, not_found
from ctxagent.tools.textfile import (
    SNIFF_BYTES,
    TextFormat,
    binary_kind,
    binary_message,
    decode_for_edit,
    encode_text,
    sniff_encoding,
    unified_diff,
)
from pydantic import Field

MAX_LINES = 2000  # lines returned by one read_file call
MAX_CHARS = 256 * 1024  # characters returned by one read_file call
MAX_LINE_CHARS = 2000  # longer lines are cut with a marker
MAX_SCAN_BYTES = 64 * 1024 * 1024  # past this, read_file stops counting lines ("at least N lines")
CHUNK = 64 * 1024
DIFF_SHOWN_CHARS = 20_000
DIFF_META_CHARS = 200_000
LIST_MAX = 500


def _change_meta(rel: str, diff: str, ranges: list[list[int]], created: bool) -> dict[str, Any]:
    return {"files": [rel], "changed_files": [rel] if diff or created else [], "lines": {rel: ranges},
            "diff": cap_text(diff, DIFF_META_CHARS, "diff cut")[0], "created": created}


# --- read_file ----------------------------------------------------------------------------------


@dataclass
class _Scan:
    shown: list[tuple[int, str]]
    total: int  # lines in the file (a lower bound when `partial_scan`)
    partial_scan: bool
    budget_hit: bool
    replaced: bool


def _scan(fh: BinaryIO, encoding: str, start: int, end: int) -> _Scan:
    """Stream the file; keep lines start..end (bounded by MAX_LINES / MAX_CHARS), count the rest."""
    decoder = codecs.getincrementaldecoder(encoding)("replace")
    last = min(end, start + MAX_LINES - 1)
    shown: list[tuple[int, str]] = []
    lineno, cur, cur_len, used, scanned = 1, "", 0, 0, 0
    budget_hit = replaced = partial = False

    def finish(n: int, head: str, full: int) -> None:
        nonlocal used, budget_hit
        if not (start <= n <= last) or budget_hit:
            return
        head = head[:-1] if head.endswith("\r") and full <= MAX_LINE_CHARS else head
        if full > MAX_LINE_CHARS:
            head += f" [... line truncated: {full - MAX_LINE_CHARS:,} more characters]"
        if used + len(head) > MAX_CHARS and shown:
            budget_hit = True
            return
        used += len(head) + 1
        shown.append((n, head))

    while True:
        raw = fh.read(CHUNK)
        text = decoder.decode(raw, final=not raw)
        replaced = replaced or "\ufffd" in text
        pieces = text.split("\n")
        if lineno + len(pieces) - 1 < start or lineno > last or budget_hit:
            lineno += len(pieces) - 1  # nothing here is shown: only count
            cur_len = cur_len + len(pieces[0]) if len(pieces) == 1 else len(pieces[-1])
            cur = ""
        else:
            for i, piece in enumerate(pieces):
                if len(cur) < MAX_LINE_CHARS:
                    cur += piece[: MAX_LINE_CHARS - len(cur)]
                cur_len += len(piece)
                if i < len(pieces) - 1:
                    finish(lineno, cur, cur_len)
                    lineno, cur, cur_len = lineno + 1, "", 0
        if not raw:
            break
        scanned += len(raw)
        if scanned >= MAX_SCAN_BYTES and (lineno > last or budget_hit):
            partial = True
            break
    if not partial and cur_len:
        finish(lineno, cur, cur_len)
    total = lineno if (cur_len or partial) else lineno - 1
    return _Scan(shown, total, partial, budget_hit, replaced)


PATH_DESCRIPTION = "file path relative to the repository root"


class ReadFileArgs(ToolArgs):
    path: str = Field(description=PATH_DESCRIPTION)
    # the minimum is shown to the model; read_file itself says why (lines are numbered from 1)
    start_line: int | None = Field(None, description="first line to show (1-based)", json_schema_extra={"minimum": 1})
    end_line: int | None = Field(None, description="last line to show (inclusive)", json_schema_extra={"minimum": 1})


def read_file(args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
    start, end = args.start_line, args.end_line
    if start is not None and start < 1:
        raise ToolError(f"start_line must be >= 1 (lines are numbered from 1), got {start}")
    if end is not None and end < (start or 1):
        raise ToolError(f"end_line ({end}) must be >= start_line ({start or 1})")
    try:
        fh, st, shown_name = open_in_repo(ctx.root, args.path)
    except ToolError as exc:
        if str(exc).startswith("file not found"):
            raise ToolError(not_found(ctx.root, args.path)) from None
        raise
    if ctx.files.read_through:  # the editor's buffer of the file just confined on disk
        fh.close()
        fh = ctx.files.open_read(ctx.root / shown_name)
    with fh:
        sample = fh.read(SNIFF_BYTES)
        image = sniff(sample) is not None  # PNG, JPEG, GIF, WEBP by their bytes
        if image and ctx.services.images:  # an attachment the model sees, not text
            return read_image(fh, sample, st.st_size, shown_name, ctx)
        kind = binary_kind(sample, shown_name)
        if kind:
            why = "its contents are not shown" + (" (this model takes no images)" if image else "")
            return ToolResult(binary_message(shown_name, kind, st.st_size, why),
                              is_error=True, meta={"binary": True, "size": st.st_size, "type": kind})
        encoding, bom = sniff_encoding(sample)
        fh.seek(len(bom))
        scan = _scan(fh, encoding, start or 1, end or 2**62)
    total = f"at least {scan.total:,}" if scan.partial_scan else f"{scan.total:,}"
    if not scan.shown:
        if scan.total == 0:
            return ToolResult(f"({shown_name} is empty)", meta={"files": [shown_name], "total_lines": 0})
        raise ToolError(f"start_line {start} is past the end of {quote(shown_name)}, which has {total} lines")
    body = "\n".join(f"{n:>5}\t{text}" for n, text in scan.shown)
    first, last = scan.shown[0][0], scan.shown[-1][0]
    notes = []
    if scan.replaced:
        notes.append("[note: the file is not valid UTF-8; undecodable bytes are shown as \ufffd]")
    if first > 1 or last < scan.total or scan.partial_scan:
        why = " (output size cap reached)" if scan.budget_hit else ""
        more = (end is None or end > last) and (last < scan.total or scan.partial_scan)
        page = f"; continue with start_line={last + 1}" if more else ""
        notes.append(f"[showing lines {first}-{last} of {total}{why}{page}]")
    if any("[... line truncated:" in t for _, t in scan.shown):
        notes.append(f"[lines longer than {MAX_LINE_CHARS:,} characters were truncated; use grep or shell to search them]")
    content = body + ("\n" + "\n".join(notes) if notes else "")
    return ToolResult(content, meta={"files": [shown_name], "lines_shown": [first, last], "total_lines": scan.total})


# --- write_file and edit_file -------------------------------------------------------------------


class WriteFileArgs(ToolArgs):
    path: str = Field(description=PATH_DESCRIPTION)
    content: str = Field(description="the complete new file content")


def write_file(args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
    content = args.content
    with walk_repo(ctx.root, args.path, for_write=True, create_dirs=True) as entry:
        rel = entry.rel
        if rel == "." or entry.name == ".":
            raise ToolError("path is the repository root; give a file path")
        created = not entry.exists
        before, fmt = "", TextFormat()
        if not created:
            data = _read_entry(ctx, entry)
            kind = binary_kind(data[:SNIFF_BYTES], rel)
            if kind is None:
                before, fmt = decode_for_edit(data, rel)
                content = content.replace("\r\n", "\n") if fmt.crlf else content  # written back as CRLF
        _replace(ctx, entry, encode_text(content, fmt))
    diff, ranges = unified_diff(rel, before, content, created)
    n_lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    head = f"{'created' if created else 'wrote'} {rel} ({n_lines:,} lines, {len(content):,} characters)"
    shown = cap_text(diff, DIFF_SHOWN_CHARS, "read_file shows the file")[0] if diff else "(no changes: same content)"
    return ToolResult(head + "\n" + shown, meta=_change_meta(rel, diff, ranges if diff else [], created))


def _read_entry(ctx: ToolContext, entry: Entry) -> bytes:
    """A confined file's bytes: the editor's buffer where the session reads through one (tools/contract.py
    FileAccess), else the disk through the walk's descriptor."""
    if ctx.files.read_through:
        with ctx.files.open_read(ctx.root / entry.rel) as fh:
            return fh.read()
    return read_entry(entry)


def _replace(ctx: ToolContext, entry: Entry, data: bytes) -> None:
    if ctx.files.write_through:
        ctx.files.write(ctx.root / entry.rel, data)
    else:
        replace_in_repo(entry, data)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


class EditFileArgs(ToolArgs):
    path: str = Field(description=PATH_DESCRIPTION)
    old_text: str = Field(description="the exact text to replace")
    new_text: str = Field(description="the replacement text")
    replace_all: bool | None = Field(None, description="replace every occurrence (default false)")


def edit_file(args: EditFileArgs, ctx: ToolContext) -> ToolResult:
    old, new = args.old_text, args.new_text
    replace_all = bool(args.replace_all)
    if old == "":
        raise ToolError("old_text is empty; give the exact text to replace (to create or overwrite a file use write_file)")
    if old == new:
        raise ToolError("old_text and new_text are identical; nothing to change")
    try:
        with walk_repo(ctx.root, args.path, for_write=True) as found:
            rel = found.rel
            if not found.exists:
                raise MissingDirectory((), [])
            before, fmt = decode_for_edit(_read_entry(ctx, found), rel)
            if fmt.crlf:  # the model sees LF lines from read_file; match and write in that form
                old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
            positions = _find_all(before, old)
            if not positions:
                raise ToolError(f"old_text was not found in {rel}. {_no_match_help(before, old)}")
            if len(positions) > 1 and not replace_all:
                lines = list(dict.fromkeys(_line_of(before, p) for p in positions))
                at = ", ".join(map(str, lines[:20])) + (" ..." if len(lines) > 20 else "")
                raise ToolError(f"old_text matches {len(positions)} times in {rel} (at lines {at}); include more "
                                "surrounding lines to make it unique, or set replace_all=true to replace every occurrence")
            after = before.replace(old, new) if replace_all else before.replace(old, new, 1)
            _replace(ctx, found, encode_text(after, fmt))
    except FileNotFoundError:
        raise ToolError(not_found(ctx.root, args.path) + " (edit_file changes existing files; use write_file to create one)") from None
    ranges = _edited_ranges(after, positions, len(old), new)
    diff, _ = unified_diff(rel, before, after, False)
    n = len(positions)
    head = f"edited {rel}: replaced {n} occurrence{'s' if n != 1 else ''} (lines {', '.join(f'{a}-{b}' for a, b in ranges)})"
    return ToolResult(head + "\n" + cap_text(diff, DIFF_SHOWN_CHARS, "read_file shows the file")[0],
                      meta={**_change_meta(rel, diff, ranges, False), "replacements": n})


def _find_all(text: str, needle: str) -> list[int]:
    out, pos = [], text.find(needle)
    while pos != -1:
        out.append(pos)
        pos = text.find(needle, pos + len(needle))
    return out


def _edited_ranges(after: str, old_positions: list[int], old_len: int, new: str) -> list[list[int]]:
    span = max(new.count("\n") - (1 if new.endswith("\n") else 0), 0)
    ranges: list[list[int]] = []
    shift, line, last_pos = len(new) - old_len, 1, 0
    for k, p in enumerate(old_positions):
        pos = p + k * shift
        line += after.count("\n", last_pos, pos)
        last_pos = pos
        if ranges and line <= ranges[-1][1] + 1:
            ranges[-1][1] = max(ranges[-1][1], line + span)
        else:
            ranges.append([line, line + span])
    return ranges


def _no_match_help(content: str, old: str) -> str:
    """Why the text was not found and where the closest lines are, so the next try succeeds."""
    old_lines = old.split("\n")
    numbered = [s for s in old_lines if s.strip()]
    if numbered and all("\t" in s and s.lstrip().split("\t", 1)[0].isdigit() for s in numbered):
        return "old_text seems to include the line-number prefixes that read_file shows; remove them."
    lines = content.split("\n")
    want = [s.strip() for s in old_lines]
    for i in range(len(lines) - len(want) + 1):
        if lines[i].strip() == want[0] and [s.strip() for s in lines[i:i + len(want)]] == want:
            return (f"It matches lines {i + 1}-{i + len(want)} if leading/trailing whitespace is ignored: the indentation "
                    "or trailing spaces differ. Copy the exact text from read_file.")
    probe = next((s.strip() for s in old_lines if s.strip()), "")[:300]
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(probe)
    scored: list[tuple[float, int]] = []
    for i, line in enumerate(lines[:50000]):
        cand = line.strip()[:300]
        if not cand:
            continue
        matcher.set_seq1(cand)
        if matcher.real_quick_ratio() < 0.5 or matcher.quick_ratio() < 0.5:
            continue
        scored.append((matcher.ratio(), i))
    best = sorted((s for s in scored if s[0] >= 0.5), key=lambda s: (-s[0], s[1]))[:3]
    if not best:
        return "No similar lines either; read_file the file to see its current content."
    parts = ["The closest lines in the file are:"]
    for _score, i in sorted(best, key=lambda s: s[1]):
        window = lines[i:i + min(max(len(old_lines), 1), 6)]
        parts.append("\n".join(f"{i + 1 + k:>5}\t{s[:MAX_LINE_CHARS]}" for k, s in enumerate(window)))
    return "\n".join(parts) + "\nCopy the exact text (without the line numbers) into old_text."


# --- list_files ---------------------------------------------------------------------------------


class ListFilesArgs(ToolArgs):
    path: str | None = Field(None, description="directory relative to the repository root (default: the root)")
    glob: str | None = Field(None, description="glob filter; without '/' it matches file names at any depth")


def list_files(args: ListFilesArgs, ctx: ToolContext) -> ToolResult:
    given = args.path or "."
    try:
        with walk_repo(ctx.root, given) as entry:
            exists, base_rel = entry.exists, entry.rel
    except FileNotFoundError:
        exists, base_rel = False, "."
    if not exists:
        raise ToolError(not_found(ctx.root, given))
    glob = args.glob
    keep = None
    if glob:
        match = glob_matcher(glob, float(ctx.config.get("regex_seconds") or MATCH_SECONDS))
        prefix = "" if base_rel == "." else base_rel + "/"

        def keep(f: str) -> bool:
            return match(f) or (f.startswith(prefix) and match(f[len(prefix):]))
    base = resolve_in_repo(ctx.root, base_rel)
    files, source = list_repo_files(ctx.root, base, limit=LIST_MAX, keep=keep)
    more = source == "walk" and len(files) > LIST_MAX  # the walk stops at the cap: the total is unknown
    where = "the repository" if base_rel == "." else base_rel
    if not files:
        return ToolResult(f"no files in {where}" + (f" match glob {quote(glob)}" if glob else ""), meta={"count": 0, "source": source})
    count = f"more than {LIST_MAX:,}" if more else f"{len(files):,}"
    head = f"{count} file{'s' if len(files) != 1 else ''} in {where}" + (f" matching {quote(glob)}" if glob else "")
    body = "\n".join(files[:LIST_MAX])
    if more:
        body += f"\n[... more files not shown (the listing stopped at {LIST_MAX:,}); narrow with path= or glob=]"
    elif len(files) > LIST_MAX:
        body += f"\n[... {len(files) - LIST_MAX:,} more files not shown; narrow with path= or glob=]"
    meta: dict[str, Any] = {"count": len(files), "source": source}
    if more:
        meta["stopped_at_cap"] = True  # `count` is a lower bound
    return ToolResult(head + ":\n" + body, meta=meta)


# --- the tools ----------------------------------------------------------------------------------


def file_tools() -> list[FunctionTool[Any]]:
    return [
        FunctionTool("read_file", (
            "Read a text file with numbered lines (\"   12\\t...\"). At most 2,000 lines / 256 KB per call: "
            "page with start_line/end_line. Binary files are described, not shown."),
            ReadFileArgs, "read", read_file),
        FunctionTool("edit_file", (
            "Replace exact text in an existing file and return a unified diff. old_text must match exactly once "
            "(copy it from read_file without line numbers, include enough context) unless replace_all is true."),
            EditFileArgs, "edit", edit_file),
        FunctionTool("write_file", (
            "Create a file or overwrite it with the given content (parent directories are created). "
            "Returns a unified diff against the previous content. Prefer edit_file for small changes."),
            WriteFileArgs, "edit", write_file),
        FunctionTool("list_files", (
            "List files (respecting .gitignore) under a directory, optionally filtered by a glob such as "
            "'*.py' or 'src/**/test_*.py'. At most 500 names are shown."),
            ListFilesArgs, "read", list_files),
    ]
