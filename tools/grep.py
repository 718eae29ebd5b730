"""The grep tool: ripgrep when it is there, a Python search otherwise, the same output either way.

Output is "path:line:text", sorted by path, paths relative to the repository root, capped at
MAX_MATCHES lines / MAX_CHARS characters with the total count and a hint on how to narrow. The
pattern is checked first (`context/floor/bounded_regex.py`, the syntax of Python's `re`) so the model gets
one clear message for a bad regex; a pattern that ripgrep's engine does not take (look-around,
backreferences) is run by the Python search instead, within a time budget: a pattern that
backtracks catastrophically ends the call with an error saying so, it never hangs.

Confined like every file tool (tools/confine.py). The Python search opens each file beneath the
root. ripgrep runs in the searched directory itself — its cwd is the directory's open descriptor
(`/proc/self/fd/N`), never a path looked up again — follows no symbolic link, and what it prints is
checked before it is shown: every line kept must be the line at that number of the file as
`open_in_repo` reads it now. A file that cannot be read that way (a link out swapped in during the
search, a hard link, a FIFO) contributes nothing, not even a count.

Bounded on a large tree: ripgrep stops once it has printed STOP_AFTER matches (the count is then
"at least"), skips files over MAX_FILE_BYTES, and the Python search stops at the same count.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ctxagent.context.errors import ToolError
from ctxagent.context.floor.beneath import open_dir
from ctxagent.context.floor.bounded_regex import MATCH_SECONDS, BoundedPattern
from ctxagent.tools.confine import files_in_repo, open_in_repo, quote, resolve_in_repo, walk_repo
from ctxagent.tools.contract import FunctionTool, ToolArgs, ToolContext, ToolResult
from ctxagent.tools.listing import glob_matcher, list_repo_files
from pydantic import Field

MAX_MATCHES = 200
MAX_CHARS = 30_000
MAX_LINE_CHARS = 500
MAX_FILE_BYTES = 50 * 1024 * 1024  # larger files are not searched
STOP_AFTER = 2000  # matches: past this the search stops and the total is a lower bound
TIMEOUT = 60.0


def find_rg() -> str | None:
    """The `rg` binary: the one the ripgrep wheel put next to this interpreter, else one on PATH."""
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file():
        return str(beside)
    return shutil.which("rg")


@dataclass
class GrepResult:
    lines: list[str] = field(default_factory=list)  # the kept "path:line:text" lines
    chars: int = 0
    total: int = 0  # every match, kept or not
    files: set[str] = field(default_factory=set)
    engine: str = "python"
    note: str = ""
    stopped: bool = False  # STOP_AFTER reached: `total` is a lower bound
    per_file: dict[str, int] = field(default_factory=dict)
    kept: list[tuple[str, int, str]] = field(default_factory=list)  # (path, line number, text as found)

    def add(self, path: str, lineno: int, text: str) -> None:
        self.total += 1
        self.files.add(path)
        self.per_file[path] = self.per_file.get(path, 0) + 1
        self.stopped = self.total >= STOP_AFTER
        if len(self.lines) >= MAX_MATCHES or self.chars >= MAX_CHARS:
            return
        text = text.rstrip("\r\n")
        self.kept.append((path, lineno, text))
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + f" [... {len(text) - MAX_LINE_CHARS:,} more characters]"
        line = f"{path}:{lineno}:{text}"
        self.lines.append(line)
        self.chars += len(line) + 1

    def drop_file(self, path: str) -> None:
        """Forget every match in `path` (it could not be read confined)."""
        self.total -= self.per_file.pop(path, 0)
        self.files.discard(path)
        keep = [(k, line) for k, line in zip(self.kept, self.lines, strict=True) if k[0] != path]
        self.kept, self.lines = [k for k, _ in keep], [line for _, line in keep]
        self.chars = sum(len(line) + 1 for line in self.lines)

    def drop_line(self, index: int) -> None:
        path = self.kept[index][0]
        self.total -= 1
        self.per_file[path] -= 1
        del self.kept[index], self.lines[index]
        self.chars = sum(len(line) + 1 for line in self.lines)


def _search_file(fh: BinaryIO, rel: str, regex: BoundedPattern, result: GrepResult) -> None:
    if b"\x00" in fh.read(8192):
        return  # binary, as ripgrep does
    fh.seek(0)
    text = io.TextIOWrapper(fh, encoding="utf-8", errors="replace", newline="")
    for lineno, line in enumerate(text, 1):
        if regex.search(line):
            result.add(rel, lineno, line)
            if result.stopped:
                return


def search_python(root: Path, base: Path, regex: BoundedPattern, glob: str | None,
                  cancel: threading.Event | None = None) -> GrepResult:
    files, _ = list_repo_files(root, base)
    if glob:
        match = glob_matcher(glob, regex.seconds)
        files = [f for f in files if match(f)]
    result = GrepResult(engine="python")
    skipped_large = 0
    with files_in_repo(root) as open_file:
        for rel in files:
            if cancel is not None and cancel.is_set():
                result.note = "[cancelled: results are incomplete]"
                break
            try:
                fh, st, _ = open_file(rel)
            except (OSError, ToolError):
                continue  # not a regular file beneath the root (a link out, a FIFO, a hard link): not searched
            with fh:
                if st.st_size > MAX_FILE_BYTES:
                    skipped_large += 1
                    continue
                try:
                    _search_file(fh, rel, regex, result)
                except OSError:
                    continue
            if result.stopped:
                break
    if skipped_large:
        result.note = f"[{skipped_large} file(s) over {MAX_FILE_BYTES // (1024 * 1024)} MB were not searched]"
    return result


def confirm(root: Path, result: GrepResult) -> GrepResult:
    """Keep only what the files beneath the root hold now: each kept line is compared with the line
    at that number of the file read through `open_in_repo`; a file that cannot be read so is dropped."""
    wanted: dict[str, set[int]] = {}
    for path, lineno, _text in result.kept:
        wanted.setdefault(path, set()).add(lineno)
    actual: dict[str, dict[int, str]] = {}
    with files_in_repo(root) as open_file:
        for path, numbers in wanted.items():
            try:
                fh, _st, _rel = open_file(path)
            except (OSError, ToolError):
                result.drop_file(path)
                continue
            actual[path] = _lines_at(fh, numbers)
    for i in range(len(result.kept) - 1, -1, -1):
        path, lineno, shown = result.kept[i]
        found = actual.get(path, {}).get(lineno)
        if found is None or not _same_line(found, shown):
            result.drop_line(i)
    return result


def _lines_at(fh: BinaryIO, numbers: set[int]) -> dict[int, str]:
    lines: dict[int, str] = {}
    last = max(numbers)
    with fh:
        text = io.TextIOWrapper(fh, encoding="utf-8", errors="replace", newline="")
        for lineno, line in enumerate(text, 1):
            if lineno in numbers:
                lines[lineno] = line.rstrip("\r\n")
            if lineno >= last:
                break
    return lines


def _same_line(actual: str, shown: str) -> bool:
    """ripgrep prints a line whole, or a preview of a long one (`--max-columns-preview`)."""
    if actual == shown:
        return True
    preview = shown.split(" [... omitted end of long line]", 1)[0]
    return preview != shown and actual.startswith(preview)


class _RgRejected(Exception):
    """ripgrep could not parse a pattern that Python's `re` accepted."""


def search_rg(rg: str, root: Path, base_rel: str, pattern: str, ignore_case: bool, glob: str | None,
              cancel: threading.Event | None = None) -> GrepResult:
    """ripgrep over `base_rel`: a directory is searched from its own descriptor (the cwd), a file is
    opened confined and given as ripgrep's standard input (see the module's docstring)."""
    # No `--sort path`: it makes ripgrep search with one thread (8 s on 200k files); the hits are
    # sorted here instead, so the lines shown are the same on every run.
    cmd = [rg, "--line-number", "--no-heading", "--with-filename", "--color", "never",
           "--hidden", "--iglob", "!.git/", "--iglob", "!.ctxagent/", "--no-config", "--null",
           "--max-filesize", str(MAX_FILE_BYTES), "--max-columns", str(MAX_LINE_CHARS * 4), "--max-columns-preview"]
    if ignore_case:
        cmd.append("--ignore-case")
    if glob:
        cmd += ["--glob", glob]
    result = GrepResult(engine="rg")
    rel = base_rel
    with walk_repo(root, base_rel) as entry:
        single = entry.st is not None and not stat.S_ISDIR(entry.st.st_mode)
        if single:
            fh, _st, rel = open_in_repo(root, base_rel)
            fd, prefix = fh.fileno(), ""
        else:
            fh, fd, prefix = None, open_dir(entry, base_rel), "" if base_rel == "." else base_rel + "/"
    cmd += ["--regexp", pattern, "--", "-" if single else "."]
    try:
        here = f"/proc/self/fd/{fd}"
        cwd = (str(root) if single else here if os.path.isdir(here) else str(resolve_in_repo(root, base_rel)))
        proc = subprocess.Popen(cmd, cwd=cwd, pass_fds=() if single else (fd,), stdin=fh if single else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finally:
        if fh is not None:
            fh.close()
        else:
            os.close(fd)
    timer = threading.Timer(TIMEOUT, proc.kill)
    timer.start()
    started = time.monotonic()
    assert proc.stdout is not None and proc.stderr is not None
    hits: list[tuple[str, int, str]] = []
    try:
        for raw in proc.stdout:  # --max-columns keeps each line bounded, even for a 10 MB one-line file
            if cancel is not None and cancel.is_set():
                proc.kill()
                result.note = "[cancelled: results are incomplete]"
                break
            raw_path, _, raw_rest = raw.partition(b"\0")
            path = rel if single else raw_path.decode("utf-8", "surrogateescape").removeprefix("./")  # bytes as \xNN
            num, _, text = raw_rest.decode("utf-8", "replace").partition(":")
            if num.isdigit():
                hits.append((prefix + path, int(num), text))
                if len(hits) >= STOP_AFTER:
                    proc.kill()
                    break
        err = proc.stderr.read().decode("utf-8", "replace") if len(hits) < STOP_AFTER else ""
        code = proc.wait()
    finally:
        timer.cancel()
        proc.stdout.close()
        proc.stderr.close()
    for path, lineno, text in sorted(hits, key=lambda h: (h[0].split("/"), h[1])):  # ripgrep's --sort path order
        result.add(path, lineno, text)
    if code == 2 and "regex" in err.lower() and not result.total:
        raise _RgRejected(err.strip())
    if time.monotonic() - started >= TIMEOUT and code != 0 and not result.stopped:
        result.note = f"[search stopped after {TIMEOUT:g} s; results are incomplete]"
    return confirm(root, result)


class GrepArgs(ToolArgs):
    pattern: str = Field(description="regular expression")
    path: str | None = Field(None, description="file or directory to search (default: the repository root)")
    glob: str | None = Field(None, description="only files matching this glob, e.g. '*.py' or 'src/**/*.ts'")
    ignore_case: bool | None = Field(None, description="case-insensitive search (default false)")


def grep(args: GrepArgs, ctx: ToolContext) -> ToolResult:
    pattern = args.pattern
    if pattern == "":
        raise ToolError("pattern is empty; give a regular expression (e.g. 'def load_config')")
    if "\x00" in pattern:
        raise ToolError("pattern contains a NUL byte")
    ignore_case = bool(args.ignore_case)
    glob = args.glob or None
    regex = BoundedPattern(pattern, ignore_case=ignore_case, seconds=float(ctx.config.get("regex_seconds") or MATCH_SECONDS))
    try:
        with walk_repo(ctx.root, args.path or ".") as entry:
            exists, base_rel = entry.exists, entry.rel
    except FileNotFoundError:
        exists = False
    if not exists:
        raise ToolError(f"path not found: {quote(args.path)}; use list_files to see what exists")
    base = resolve_in_repo(ctx.root, base_rel)
    engine = ctx.config.get("grep_engine", "auto")
    rg = find_rg() if engine in ("auto", "rg") else None
    if engine == "rg" and rg is None:
        raise ToolError("grep_engine is 'rg' but no rg binary was found")
    result: GrepResult | None = None
    if rg is not None:
        try:
            result = search_rg(rg, ctx.root, base_rel, pattern, ignore_case, glob, ctx.cancel)
        except _RgRejected:
            result = None  # ripgrep's engine lacks this feature; Python's has it
        except OSError:
            result = None
    if result is None:
        result = search_python(ctx.root, base, regex, glob, ctx.cancel)
    where = "" if base_rel == "." else f" in {base_rel}"
    meta = {"matches": result.total, "files": len(result.files), "engine": result.engine,
            "truncated": result.total > len(result.lines) or result.stopped}
    if not result.total:
        text = f"no matches for {quote(pattern)}{where}" + (f" (glob {quote(glob)})" if glob else "")
        return ToolResult(text + (f"\n{result.note}" if result.note else ""), meta=meta)
    body = "\n".join(result.lines)
    if result.total > len(result.lines):
        n_files = len(result.files)
        least = "at least " if result.stopped else ""
        body += (f"\n[showing {len(result.lines)} of {least}{result.total:,} matches in {least}{n_files:,} "
                 f"file{'s' if n_files != 1 else ''}; narrow with path=, glob= or a more specific pattern]")
    if result.note:
        body += "\n" + result.note
    return ToolResult(body, meta=meta)


def grep_tools() -> list[FunctionTool[Any]]:
    return [
        FunctionTool("grep", (
            "Search file contents with a regular expression (ripgrep syntax; .gitignore respected). "
            f"Returns 'path:line:text' lines, at most {MAX_MATCHES} matches, with the total count."),
            GrepArgs, "read", grep),
    ]
