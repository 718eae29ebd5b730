"""Where the coding tools may look and write: the one boundary of file access, and shared helpers.

Every path a tool, an @mention, an instruction file or a rewind touches is taken beneath the
repository root one name at a time from a directory descriptor (`context/floor/beneath.py`):
`..` past the root, absolute paths elsewhere, symbolic links (of the file or of any directory on
the way) that leave the root, and NUL bytes are refused with a message the model can act on, and
a link swapped in between the check and the use fails the open instead of being followed, since
there is no second look-up. `walk_repo` is the boundary; `open_in_repo` / `read_in_repo` read
through it, `replace_in_repo` writes through it (a fresh random temporary name, O_EXCL |
O_NOFOLLOW, renamed in the same directory descriptor), `resolve_in_repo` names what it found.

What is refused beyond escapes: anything but a regular file to read or write (a FIFO would block
forever, a device never end), and a regular file with more than one hard link, for reading and
for writing alike: its other names may lie anywhere on the same file system, outside the
repository, and nothing cheap tells where. (An archive or a clone cannot make one to a file
outside — tar strips absolute and `..` link targets, git has no hard links —, but a process can,
and read tools run without asking. A multiply-linked file, say from `uv` or `pnpm`, stays
readable through `shell`, which asks.) Writes into `.git/` and `.ctxagent/` are refused in any
letter case and spelling a case-insensitive file system takes for the same name (`protected_part`).

Also here, because every coding tool needs it: text capping. The lists of the repository's files and
the glob matcher are in tools/listing.py.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ctxagent.context.errors import PathOutsideRepoError, ToolError
from ctxagent.context.floor.beneath import (
    Beneath,
    Entry,
    MissingDirectory,
    file_kind,
    open_regular,
)
from ctxagent.tools.safe_text import unescape_name

__all__ = ["file_kind"]  # re-exported: tools name file kinds in their messages

# Directories the walk fallback never enters; git's own view already leaves them out.
SKIP_DIRS = frozenset({".git", ".ctxagent", "node_modules", ".venv", "__pycache__"})
# Path components no tool may write into: git's database and the agent's own state. (A sandboxed
# command may write neither, at the root or, for `.git`, anywhere below it: tools/sandbox/persistence.py.)
PROTECTED_DIRS = frozenset({".git", ".ctxagent"})
# The same names as a case-insensitive file system may also spell them (NTFS short names), folded.
GIT_SPELLINGS = frozenset({".git", "git~1"})
_PROTECTED_FOLDED = GIT_SPELLINGS | {".ctxagent", "ctxage~1"}
# Code points HFS+ ignores in names (git's own list, is_hfs_dotgit): ".g\u200cit" is ".git" there.
_IGNORED_IN_NAMES = dict.fromkeys(map(ord, "\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                                         "\u206a\u206b\u206c\u206d\u206e\u206f\ufeff"))


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


def fold_name(name: str) -> str:
    """A name as a case-insensitive file system compares it: ignorable code points dropped, NFC,
    case folded, trailing dots and spaces dropped (Windows)."""
    return unicodedata.normalize("NFC", name.translate(_IGNORED_IN_NAMES)).casefold().rstrip(". ")


def protected_part(parts: tuple[str, ...] | list[str]) -> str | None:
    """The protected folder (`.git`, `.ctxagent`) a path goes into, in any spelling; None if none."""
    return next((p for p in parts if fold_name(p) in _PROTECTED_FOLDED), None)


def _check_text(path: object) -> str:
    if not isinstance(path, str):
        raise ToolError(f"path must be a string, got {type(path).__name__}")
    if "\x00" in path:
        raise PathOutsideRepoError("path contains a NUL byte; give a plain file path relative to the repository root")
    if len(path.encode("utf-8", "surrogateescape")) > 4096 or any(len(part.encode("utf-8", "surrogateescape")) > 255 for part in path.split("/")):
        raise ToolError(f"path {quote(path)} is too long for a file system path (at most 255 bytes per name, 4096 in all)")
    text = path.strip() or "."
    if text == "~" or text.startswith("~/"):
        raise PathOutsideRepoError(
            f"path {quote(path)} points into the home directory, outside the repository; use a path relative to the repository root"
        )
    return text


def _outside(path: str, base: Beneath, exc: PathOutsideRepoError) -> PathOutsideRepoError:
    detail = str(exc).split(": ", 1)[-1] if str(exc).startswith("path ") else str(exc)
    link = " (through a symbolic link)" if "symbolic link" in detail else ""
    return PathOutsideRepoError(
        f"path {quote(path)} is outside the repository root {base.root}{link}: {detail}; only files inside the "
        "repository can be used")


@contextmanager
def walk_repo(root: Path, path: str, *, for_write: bool = False, create_dirs: bool = False) -> Iterator[Entry]:
    """The boundary: `path` (relative to `root`, or absolute inside it) taken beneath the root.

    Yields the Entry (its directory's descriptor, its name, its lstat) with links inside the root
    followed. With `for_write`, a path into `.git/` or `.ctxagent/` is refused and `create_dirs`
    makes missing directories. Raises ToolError (PathOutsideRepoError for escapes), or
    FileNotFoundError when a directory on the way is missing.
    """
    text = _check_text(path)
    try:
        base = Beneath(repo_root(root))
    except OSError as exc:
        raise ToolError(f"the repository root {root} is not accessible: {exc.strerror or exc}") from exc
    try:
        entry = _walk(base, Path(root), text, path, for_write=for_write, create_dirs=create_dirs)
        with entry:
            yield entry
    finally:
        base.close()


def _refusal(parts: tuple[str, ...] | list[str], given: str) -> ToolError | None:
    bad = protected_part(parts)
    if bad is None:
        return None
    owner = "git" if fold_name(bad) in GIT_SPELLINGS else "ctxagent"
    return ToolError(f"refusing to write into {bad}/ ({quote(given)}): it holds {owner}'s own state")


def _inside(base: Beneath, root: Path, text: str) -> str:
    """`text` as a path beneath the root when it is one by name: an absolute path under the root
    as given or as resolved (or that resolves there), or a relative one that leaves and re-enters
    (`../repo/x`). Only names: the walk that follows still resolves every link beneath the root."""
    candidates = [text] if os.path.isabs(text) else [os.path.join(os.path.abspath(root), text)]
    if os.path.isabs(text):
        try:
            candidates.append(os.path.join(os.path.realpath(os.path.dirname(text)), os.path.basename(text)))
        except (OSError, ValueError):
            pass
    for cand in candidates:
        for top in (os.path.abspath(root), base.root):
            norm = os.path.normpath(cand)
            if norm == top:
                return "."
            if norm.startswith(top.rstrip("/") + "/"):
                return norm[len(top.rstrip("/")) + 1:]
    return text


def _walk(base: Beneath, root: Path, text: str, given: str, *, for_write: bool, create_dirs: bool) -> Entry:
    def refuse(parts: tuple[str, ...]) -> None:
        exc = _refusal(parts, given)
        if exc is not None:
            raise exc

    def once(t: str) -> Entry:
        try:
            return base.walk(t, shown=given, create_dirs=create_dirs, check=refuse if for_write else None)
        except PathOutsideRepoError as exc:
            inner = _inside(base, root, t)
            if inner == t:
                raise _outside(given, base, exc) from None
        try:
            return base.walk(inner, shown=given, create_dirs=create_dirs, check=refuse if for_write else None)
        except PathOutsideRepoError as exc:
            raise _outside(given, base, exc) from None
        except FileExistsError as exc:
            raise ToolError(f"cannot create {quote(given)}: a parent path exists and is not a directory") from exc

    unescaped = unescape_name(text)
    if unescaped == text:
        return once(text)
    try:
        first = once(text)
    except FileNotFoundError:
        return once(unescaped)
    if first.exists:
        return first
    first.close()
    return once(unescaped)  # a name shown with its non-UTF-8 bytes as \xNN


def resolve_in_repo(root: Path, path: str, *, for_write: bool = False) -> Path:
    """The absolute path `path` names beneath `root`, symbolic links inside resolved; escapes refused.

    For naming and checking only: reading and writing go through `walk_repo` (`open_in_repo`,
    `replace_in_repo`), so that nothing is looked up twice. A path whose directories do not exist
    yet resolves as written past the last one that does.
    """
    try:
        with walk_repo(root, path, for_write=for_write) as entry:
            return Path(repo_root(root)).joinpath(*entry.parts)
    except MissingDirectory as exc:
        parts = list(exc.parts)
        rest = exc.rest
    for part in rest:
        if part == "..":
            parts.pop()  # never empty: it holds at least the missing directory
        elif part not in ("", "."):
            parts.append(part)
    if for_write and (refused := _refusal(parts, path)) is not None:
        raise refused
    return Path(repo_root(root)).joinpath(*parts)


def relative(root: Path, path: Path) -> str:
    """The repository-relative POSIX form of an already resolved path ('.' for the root)."""
    rel = path.relative_to(repo_root(root)).as_posix()
    return rel or "."


def open_in_repo(root: Path, path: str) -> tuple[BinaryIO, os.stat_result, str]:
    """The regular file `path` names, opened beneath `root` for reading: (file, stat, resolved rel).

    Refused: a directory, a FIFO, a device, a socket, a file with more than one hard link; a
    missing one is ToolError("file not found")."""
    try:
        with walk_repo(root, path) as entry:
            shown = entry.rel
            if not entry.exists:
                raise ToolError(f"file not found: {quote(path)}")
            fd, st = open_regular(entry, shown)
    except FileNotFoundError:
        raise ToolError(f"file not found: {quote(path)}") from None
    return os.fdopen(fd, "rb"), st, shown


@contextmanager
def files_in_repo(root: Path) -> Iterator[Callable[[str], tuple[BinaryIO, os.stat_result, str]]]:
    """`open_in_repo` for many repository-relative names (as git lists them): the root is resolved
    and opened once, and each name is walked from it (grep over thousands of files)."""
    base = Beneath(repo_root(root))

    def open_one(rel: str) -> tuple[BinaryIO, os.stat_result, str]:
        with base.walk(rel, shown=rel) as entry:
            if not entry.exists:
                raise ToolError(f"file not found: {quote(rel)}")
            fd, st = open_regular(entry, entry.rel)
        return os.fdopen(fd, "rb"), st, entry.rel
    try:
        yield open_one
    finally:
        base.close()


def read_in_repo(root: Path, path: str, limit: int | None = None) -> tuple[bytes, str]:
    fh, _st, rel = open_in_repo(root, path)
    with fh:
        return (fh.read() if limit is None else fh.read(limit)), rel


def read_entry(entry: Entry) -> bytes:
    """The content of the regular file an Entry (from `walk_repo`) names, under the same refusals."""
    fd, _st = open_regular(entry, entry.rel)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def stat_regular_file(path: Path, shown: str) -> os.stat_result:
    """Stat `path` and refuse anything but a regular file (devices, FIFOs and sockets never end or block).

    By path, for messages about a path already chosen; the tools' own reads go through `open_in_repo`."""
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
