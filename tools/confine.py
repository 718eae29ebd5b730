"""Where the coding tools may look and write: confinement to the repository root, and shared helpers.

Every path a model hands us goes through `resolve_in_repo`: `..` escapes, absolute paths elsewhere,
symlinks (of the file or of any parent directory) that resolve outside the root, and NUL bytes are
refused with a message the model can act on. Writes into `.git/` and `.ctxagent/` are refused too.

Also here, because every coding tool needs them: the list of files in the repository (git's view,
so .gitignore is respected), a glob matcher with `**`, and text capping.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

from ctxagent.context.errors import PathOutsideRepoError, ToolError
from ctxagent.context.floor.bounded_regex import MATCH_SECONDS, BoundedPattern
from ctxagent.context.floor.gitsafe import run_git
from ctxagent.tools.safe_text import unescape_name

# Directories the walk fallback never enters; git's own view already leaves them out.
SKIP_DIRS = frozenset({".git", ".ctxagent", "node_modules", ".venv", "__pycache__"})
# Path components no tool may write into: git's database and the agent's own state.
PROTECTED_DIRS = frozenset({".git", ".ctxagent"})


def quote(text: object, limit: int = 200) -> str:
    """repr() of model-given text for a message, shortened so a huge argument is not echoed back whole."""
    s = str(text)
    if len(s) > limit:
        s = s[:limit] + f"... ({len(s):,} characters)"
    return repr(s)


def repo_root(root: Path) -> Path:
    try:
        return Path(root).resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise ToolError(f"the repository root {root} is not accessible: {exc}") from exc


def resolve_in_repo(root: Path, path: str, *, for_write: bool = False) -> Path:
    """Resolve `path` (relative to `root`, or absolute) and refuse anything that ends up outside it.

    Symlinks are followed before the check, so a link inside the repository pointing elsewhere (or
    a symlinked parent directory) is refused. With `for_write`, `.git/` and `.ctxagent/` are refused.
    """
    if not isinstance(path, str):
        raise ToolError(f"path must be a string, got {type(path).__name__}")
    if "\x00" in path:
        raise PathOutsideRepoError("path contains a NUL byte; give a plain file path relative to the repository root")
    if len(path.encode("utf-8", "surrogateescape")) > 4096 or any(len(part.encode("utf-8", "surrogateescape")) > 255 for part in path.split("/")):
        raise ToolError(f"path {quote(path)} is too long for a file system path (at most 255 bytes per name, 4096 in all)")
    base = repo_root(root)
    text = path.strip() or "."
    if text == "~" or text.startswith("~/"):
        raise PathOutsideRepoError(
            f"path {quote(path)} points into the home directory, outside the repository; use a path relative to the repository root"
        )
    candidate = Path(text)
    if not candidate.is_absolute():
        candidate = base / candidate
    if not os.path.lexists(candidate) and unescape_name(text) != text:
        candidate = Path(base / unescape_name(text))  # a name shown with its non-UTF-8 bytes as \xNN
    try:
        resolved = Path(os.path.realpath(candidate))
    except (OSError, RuntimeError, ValueError) as exc:
        raise ToolError(f"cannot resolve path {quote(path)}: {exc}") from exc
    if resolved != base and base not in resolved.parents:
        via_link = " (through a symbolic link)" if _lexically_inside(base, candidate) else ""
        raise PathOutsideRepoError(
            f"path {quote(path)} resolves to {quote(resolved)}{via_link}, which is outside the repository root {base}; "
            "only files inside the repository can be used"
        )
    if for_write:
        parts = resolved.relative_to(base).parts
        bad = next((p for p in parts if p in PROTECTED_DIRS), None)
        if bad is not None:
            raise ToolError(f"refusing to write into {bad}/ ({quote(path)}): it holds {'git' if bad == '.git' else 'ctxagent'}'s own state")
    return resolved


def _lexically_inside(base: Path, candidate: Path) -> bool:
    return Path(os.path.normpath(candidate)).is_relative_to(base)


def relative(root: Path, path: Path) -> str:
    """The repository-relative POSIX form of an already resolved path ('.' for the root)."""
    rel = path.relative_to(repo_root(root)).as_posix()
    return rel or "."


def file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "a special file"


def stat_regular_file(path: Path, shown: str) -> os.stat_result:
    """Stat `path` and refuse anything but a regular file (devices, FIFOs and sockets never end or block)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ToolError(f"file not found: {quote(shown)}") from None
    except OSError as exc:
        raise ToolError(f"cannot access {quote(shown)}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{quote(shown)} is a directory, not a file; use list_files to see what it contains")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"refusing to use {quote(shown)}: it is {file_kind(st.st_mode)}, not a regular file")
    return st


# --- the repository's files -------------------------------------------------------------------


def list_repo_files(root: Path, base: Path | None = None) -> tuple[list[str], str]:
    """Files under `base` (default: the root) as sorted repository-relative POSIX paths.

    In a git work tree this is `git ls-files --cached --others --exclude-standard` (so .gitignore is
    respected); elsewhere a walk that skips SKIP_DIRS. Returns (files, "git" | "walk").
    """
    top = repo_root(root)
    base = base or top
    rel_base = base.relative_to(top).as_posix()
    files = _git_ls_files(top, rel_base)
    if files is not None:
        return files, "git"
    return _walk_files(top, base), "walk"


def _git_ls_files(top: Path, rel_base: str) -> list[str] | None:
    try:  # ls-files reads no file contents: no filter can run; gitsafe turns off the rest
        proc = run_git(["--literal-pathspecs", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--",
                        rel_base if rel_base else "."], cwd=top, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    names = {n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n}
    out = []
    for name in names:
        if name.split("/", 1)[0] in (".ctxagent",):
            continue
        # --cached lists files deleted from the work tree but still in the index; they are not there.
        if os.path.lexists(top / name):
            out.append(name)
    return sorted(out)


def _walk_files(top: Path, base: Path) -> list[str]:
    if base.is_file():
        return [base.relative_to(top).as_posix()]
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        rel_dir = Path(dirpath).relative_to(top)
        out.extend((rel_dir / f).as_posix() for f in filenames)
    return sorted(out)


def glob_matcher(pattern: str, seconds: float = MATCH_SECONDS) -> Callable[[str], bool]:
    """A matcher for repository-relative paths. `*` and `?` stay within one path segment, `**`
    spans directories, `{a,b}` alternates. A pattern without `/` matches the file name anywhere
    (like ripgrep and .gitignore), so `*.py` finds Python files at any depth. All the calls of one
    matcher share a time budget (`*a*a*a*a*a*b` on long names backtracks): past it they raise
    PatternTimeoutError."""
    pat = pattern.strip()
    if pat.startswith("./"):
        pat = pat[2:]
    bounded = BoundedPattern(_glob_to_regex(pat) + r"\Z", seconds=seconds, what="glob", shown=pattern)
    if "/" in pat:
        return bounded.match
    return lambda rel: bounded.match(rel.rsplit("/", 1)[-1])


def _glob_to_regex(pat: str) -> str:
    out: list[str] = []
    i, depth = 0, 0
    while i < len(pat):
        c = pat[i]
        if pat.startswith("**/", i):
            out.append(r"(?:.*/)?")
            i += 3
            continue
        if pat.startswith("**", i):
            out.append(r".*")
            i += 2
            continue
        if c == "*":
            out.append(r"[^/]*")
        elif c == "?":
            out.append(r"[^/]")
        elif c == "[":
            end = pat.find("]", i + 2 if pat[i + 1:i + 2] in ("!", "^", "]") else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pat[i + 1:end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    out.append(")" * depth)
    return "".join(out)


# --- output ------------------------------------------------------------------------------------


def cap_text(text: str, max_chars: int, hint: str) -> tuple[str, bool]:
    """Cut `text` at a line boundary near `max_chars`, saying how much was left out and how to narrow."""
    if len(text) <= max_chars:
        return text, False
    cut = text.rfind("\n", 0, max_chars)
    cut = cut if cut > max_chars // 2 else max_chars
    rest = text[cut:]
    omitted_lines = rest.count("\n")
    note = f"\n[output truncated: {len(rest):,} more characters ({omitted_lines:,} lines) not shown; {hint}]"
    return text[:cut] + note, True
