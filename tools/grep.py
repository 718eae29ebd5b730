"""The grep tool: ripgrep when it is there, a Python search otherwise, the same output either way.

Output is "path:line:text", sorted by path, paths relative to the repository root, capped at
MAX_MATCHES lines / MAX_CHARS characters with the total count and a hint on how to narrow. The
pattern is checked first (`context/floor/bounded_regex.py`, the syntax of Python's `re`) so the model gets
one clear message for a bad regex; a pattern that ripgrep's engine does not take (look-around,
backreferences) is run by the Python search instead, within a time budget: a pattern that
backtracks catastrophically ends the call with an error saying so, it never hangs.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxagent.context.errors import ToolError
from ctxagent.context.floor.bounded_regex import MATCH_SECONDS, BoundedPattern
from ctxagent.tools.confine import (
    glob_matcher,
    list_repo_files,
    quote,
    relative,
    repo_root,
    resolve_in_repo,
)
from ctxagent.tools.contract import FunctionTool, ToolArgs, ToolContext, ToolResult
from pydantic import Field

MAX_MATCHES = 200
MAX_CHARS = 30_000
MAX_LINE_CHARS = 500
MAX_FILE_BYTES = 50 * 1024 * 1024  # the Python search skips larger files (ripgrep has no such limit)
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

    def add(self, path: str, lineno: int, text: str) -> None:
        self.total += 1
        self.files.add(path)
        if len(self.lines) >= MAX_MATCHES or self.chars >= MAX_CHARS:
            return
        text = text.rstrip("\r\n")
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + f" [... {len(text) - MAX_LINE_CHARS:,} more characters]"
        line = f"{path}:{lineno}:{text}"
        self.lines.append(line)
        self.chars += len(line) + 1


def search_python(root: Path, base: Path, regex: BoundedPattern, glob: str | None,
                  cancel: threading.Event | None = None) -> GrepResult:
    files, _ = list_repo_files(root, base)
    if glob:
        match = glob_matcher(glob, regex.seconds)
        files = [f for f in files if match(f)]
    top = repo_root(root)
    result = GrepResult(engine="python")
    skipped_large = 0
    for rel in files:
        if cancel is not None and cancel.is_set():
            result.note = "[cancelled: results are incomplete]"
            break
        path = top / rel
        try:
            if not path.is_file() or path.is_symlink() and not path.resolve().is_relative_to(top):
                continue
            if path.stat().st_size > MAX_FILE_BYTES:
                skipped_large += 1
                continue
            with open(path, "rb") as fh:
                if b"\x00" in fh.read(8192):
                    continue  # binary, as ripgrep does
                fh.seek(0)
                text = io.TextIOWrapper(fh, encoding="utf-8", errors="replace", newline="")
                for lineno, line in enumerate(text, 1):
                    if regex.search(line):
                        result.add(rel, lineno, line)
        except OSError:
            continue
    if skipped_large:
        result.note = f"[{skipped_large} file(s) over {MAX_FILE_BYTES // (1024 * 1024)} MB were not searched]"
    return result


class _RgRejected(Exception):
    """ripgrep could not parse a pattern that Python's `re` accepted."""


def search_rg(rg: str, root: Path, base: Path, pattern: str, ignore_case: bool, glob: str | None,
              cancel: threading.Event | None = None) -> GrepResult:
    top = repo_root(root)
    cmd = [rg, "--line-number", "--no-heading", "--with-filename", "--color", "never", "--sort", "path",
           "--hidden", "--glob", "!.git/", "--glob", "!.ctxagent/", "--no-config", "--null",
           "--max-columns", str(MAX_LINE_CHARS * 4), "--max-columns-preview"]
    if ignore_case:
        cmd.append("--ignore-case")
    if glob:
        cmd += ["--glob", glob]
    cmd += ["--regexp", pattern]
    rel_base = relative(root, base)
    if rel_base != ".":
        cmd += ["--", rel_base]
    result = GrepResult(engine="rg")
    proc = subprocess.Popen(cmd, cwd=top, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    timer = threading.Timer(TIMEOUT, proc.kill)
    timer.start()
    started = time.monotonic()
    assert proc.stdout is not None and proc.stderr is not None
    try:
        for raw in proc.stdout:  # --max-columns keeps each line bounded, even for a 10 MB one-line file
            if cancel is not None and cancel.is_set():
                proc.kill()
                result.note = "[cancelled: results are incomplete]"
                break
            raw_path, _, raw_rest = raw.partition(b"\0")
            path = raw_path.decode("utf-8", "surrogateescape")  # a name's bytes, shown as \xNN (tools/safe_text.py)
            num, _, text = raw_rest.decode("utf-8", "replace").partition(":")
            if num.isdigit():
                result.add(path, int(num), text)
        err = proc.stderr.read().decode("utf-8", "replace")
        code = proc.wait()
    finally:
        timer.cancel()
        proc.stdout.close()
        proc.stderr.close()
    if code == 2 and "regex" in err.lower() and not result.total:
        raise _RgRejected(err.strip())
    if time.monotonic() - started >= TIMEOUT and code != 0:
        result.note = f"[search stopped after {TIMEOUT:g} s; results are incomplete]"
    return result


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
    base = resolve_in_repo(ctx.root, args.path or ".")
    if not base.exists():
        raise ToolError(f"path not found: {quote(args.path)}; use list_files to see what exists")
    engine = ctx.config.get("grep_engine", "auto")
    rg = find_rg() if engine in ("auto", "rg") else None
    if engine == "rg" and rg is None:
        raise ToolError("grep_engine is 'rg' but no rg binary was found")
    result: GrepResult | None = None
    if rg is not None:
        try:
            result = search_rg(rg, ctx.root, base, pattern, ignore_case, glob, ctx.cancel)
        except _RgRejected:
            result = None  # ripgrep's engine lacks this feature; Python's has it
        except OSError:
            result = None
    if result is None:
        result = search_python(ctx.root, base, regex, glob, ctx.cancel)
    where = "" if relative(ctx.root, base) == "." else f" in {relative(ctx.root, base)}"
    meta = {"matches": result.total, "files": len(result.files), "engine": result.engine,
            "truncated": result.total > len(result.lines)}
    if not result.total:
        text = f"no matches for {quote(pattern)}{where}" + (f" (glob {quote(glob)})" if glob else "")
        return ToolResult(text + (f"\n{result.note}" if result.note else ""), meta=meta)
    body = "\n".join(result.lines)
    if result.total > len(result.lines):
        n_files = len(result.files)
        body += (f"\n[showing {len(result.lines)} of {result.total:,} matches in {n_files:,} file{'s' if n_files != 1 else ''}; "
                 "narrow with path=, glob= or a more specific pattern]")
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
