"""The repository's files as lists: git's index plus untracked files, or a walk through directory
descriptors that follows no link (`list_repo_files`); a file of the same name elsewhere
(`same_name_in_index`); glob patterns matched with a time bound (`glob_matcher`); and what a read of a
name that does not exist suggests instead (`not_found`). Used by list_files, read_file, grep, the
rewind and /init's survey. Paths themselves are confined by tools/confine.py, which every name here
goes through."""

from __future__ import annotations

import difflib
import os
import re
import stat
import subprocess
from collections.abc import Callable
from itertools import islice
from pathlib import Path

from ctxagent.context.errors import ToolError
from ctxagent.context.floor.beneath import open_dir, scan_dir
from ctxagent.context.floor.bounded_regex import MATCH_SECONDS, BoundedPattern
from ctxagent.context.floor.gitsafe import repo_or_none, run_git
from ctxagent.tools.confine import SKIP_DIRS, protected_part, quote, repo_root, walk_repo

SUGGEST_SCAN = 5000  # names of one folder compared with a name that was not found
SUGGESTED = 5
SUGGEST_DIRS = 64  # folders a not-found read may look into for a file of the same name


def list_repo_files(root: Path, base: Path | None = None, *, limit: int | None = None,
                    keep: Callable[[str], bool] | None = None) -> tuple[list[str], str]:
    """Files under `base` (default: the root) as sorted repository-relative POSIX paths.

    In a git work tree this is git's index plus untracked files that no ignore rule excludes, less
    those deleted from the work tree (one `git ls-files`: git reads no file content, so no filter
    runs, and gitsafe turns off the rest); elsewhere a walk through directory descriptors
    (`os.fwalk`, no link followed) that never enters SKIP_DIRS and stops after `limit` files.
    Returns (files, "git" | "walk"); a walk cut at `limit` returns `limit + 1` names (so the
    caller can tell there were more). `keep` filters the names (the walk counts only kept ones).
    """
    top = repo_root(root)
    base = base or top
    rel_base = base.relative_to(top).as_posix()
    files = _git_ls_files(top, rel_base)
    if files is not None:
        return (files if keep is None else [f for f in files if keep(f)]), "git"
    return _walk_files(top, rel_base if rel_base != "." else "", limit, keep), "walk"


def _git_ls_files(top: Path, rel_base: str) -> list[str] | None:
    repo = repo_or_none(top)
    if repo is None:
        return None
    try:
        proc = run_git(["--literal-pathspecs", "ls-files", "-t", "--cached", "--others", "--deleted", "--exclude-standard",
                        "-z", "--", rel_base if rel_base else "."], repo=repo, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    present: set[str] = set()
    deleted: set[str] = set()
    protected: dict[str, bool] = {}  # per first name: a tree has few, and folding each of 200k names costs seconds
    for item in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        name = item[2:]  # "<tag> <name>"
        if not name:
            continue
        first = name.partition("/")[0]
        hidden = protected.get(first)
        if hidden is None:
            hidden = protected[first] = protected_part((first,)) is not None
        if not hidden:
            (deleted if item[0] == "R" else present).add(name)  # R: in the index, gone from the work tree
    return sorted(present - deleted)


def same_name_in_index(root: Path, name: str, limit: int) -> list[str]:
    """Tracked files called `name` anywhere in the repository: git's index, no walk of the tree."""
    repo = repo_or_none(repo_root(root))
    if repo is None or not name or "/" in name:
        return []
    escaped = re.sub(r"([*?\[\]\\])", r"\\\1", name)
    try:
        proc = run_git(["ls-files", "--cached", "-z", "--", f":(glob)**/{escaped}"], repo=repo, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    names = [n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n] if proc.returncode == 0 else []
    return sorted(names)[:limit]


def _walk_files(top: Path, rel_base: str, limit: int | None, keep: Callable[[str], bool] | None) -> list[str]:
    out: list[str] = []
    try:
        with walk_repo(top, rel_base or ".") as entry:
            if entry.st is not None and stat.S_ISREG(entry.st.st_mode):
                return [entry.rel]
            fd = open_dir(entry, entry.rel)
    except (OSError, ToolError):
        return []
    prefix = "" if entry.rel == "." else entry.rel + "/"
    try:
        for dirpath, dirnames, filenames, _dir_fd in os.fwalk(".", dir_fd=fd, follow_symlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and protected_part((d,)) is None)
            rel_dir = "" if dirpath == "." else dirpath[2:] + "/"
            for f in sorted(filenames):
                name = prefix + rel_dir + f
                if keep is not None and not keep(name):
                    continue
                out.append(name)
                if limit is not None and len(out) > limit:
                    return sorted(out)
    finally:
        os.close(fd)
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


# --- a name that was not found -----------------------------------------------------------------


def not_found(root: Path, given: str) -> str:
    """"file not found", with files of the same name from git's index and close names from the
    nearest folder on the way that exists: one index look-up and one directory read, whatever the
    repository's size (never a walk of the tree)."""
    msg = f"file not found: {quote(given)}"
    parts = [p for p in given.strip().split("/") if p not in ("", ".")]
    name = parts[-1] if parts else ""
    same = (same_name_in_index(root, name, SUGGESTED) or _same_name_nearby(root, name)) if name else []
    if same:
        return msg + f"; files with that name: {', '.join(same)}"
    for depth in range(len(parts) - 1, -1, -1):
        folder = "/".join(parts[:depth]) or "."
        try:
            with walk_repo(root, folder) as entry:
                if not entry.exists:
                    continue
                names = list(islice((e.name for e in scan_dir(entry, folder)), SUGGEST_SCAN))
                prefix = "" if entry.rel == "." else entry.rel + "/"
        except (OSError, ToolError):
            continue
        close = difflib.get_close_matches(name, names, n=SUGGESTED, cutoff=0.6) if name else []
        if close:
            return msg + f"; similar names in {prefix or './'}: {', '.join(prefix + c for c in close)}"
        break
    return msg + "; use list_files (with path= or glob=) to see what exists"


def _same_name_nearby(root: Path, name: str) -> list[str]:
    """Files called `name` in the first SUGGEST_DIRS folders, breadth first from the root (files git
    does not track, or no git): a bounded look, never a walk of a large tree."""
    queue: list[str] = ["."]
    found: list[str] = []
    read = 0
    while queue and read < SUGGEST_DIRS and len(found) < SUGGESTED:
        folder = queue.pop(0)
        read += 1
        try:
            with walk_repo(root, folder) as entry:
                prefix = "" if entry.rel == "." else entry.rel + "/"
                for e in islice(scan_dir(entry, folder), SUGGEST_SCAN):
                    if e.is_dir(follow_symlinks=False):
                        if e.name not in SKIP_DIRS:
                            queue.append(prefix + e.name)
                    elif e.name == name:
                        found.append(prefix + e.name)
        except (OSError, ToolError):
            continue
    return sorted(found)[:SUGGESTED]
