"""File access confined beneath a directory: every path is walked one name at a time from a descriptor.

A path string checked and then opened is two look-ups, and a symbolic link swapped in between (a
repository's own process can do it) sends the second one anywhere. So nothing here opens a path by
its string. `Beneath(root)` holds the root open; `walk` takes a path beneath it one name at a time,
each directory opened with `O_NOFOLLOW | O_DIRECTORY` relative to the one before, and resolves a
symbolic link itself: a link that stays beneath the root is followed (`docs -> ../shared/docs`), one
that leaves it (`..` past the root, an absolute target elsewhere) is refused, and with
`follow=False` every link is refused. The last name is opened relative to its directory's
descriptor with `O_NOFOLLOW`, so a link that appears after the walk fails instead of being followed.

Why a walk of our own rather than `openat2(RESOLVE_BENEATH)`: Python has no binding for it, it
exists only on Linux ≥ 5.6, and a second code path would be the one that is not tested. The walk
costs one `fstatat` and one `openat` per name, which is nothing next to reading a file.

Writes go through `replace_file`: a temporary file with a random name is created next to the target
with `O_CREAT | O_EXCL | O_NOFOLLOW` (a name planted in advance, a symbolic link included, makes it
fail and another name is drawn), written, fsynced and renamed over the target within the same
directory descriptor. A rename replaces the name, never the content of a file that another name (a
hard link) shares. Used by the tools (tools/confine.py), the rewind, the spill store and the state folder.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from ctxagent.context.errors import PathOutsideRepoError, ToolError

MAX_LINKS = 40  # symbolic links followed in one walk (Linux's own limit)
TEMP_MARK = ".ctxagent-tmp-"  # in every temporary name: `.<name>.ctxagent-tmp-<pid>-<random>`
_MAX_SHOWN_NAME = 160  # bytes of the target's name kept in a temporary name (NAME_MAX is 255)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOCTTY = getattr(os, "O_NOCTTY", 0)
# O_PATH: a directory we may traverse but not list still opens (Linux); elsewhere O_RDONLY.
_WALK_FLAGS = (getattr(os, "O_PATH", 0) or os.O_RDONLY) | _DIRECTORY | _NOFOLLOW | _CLOEXEC
_LIST_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _NOCTTY | _CLOEXEC  # a FIFO swapped in never blocks the open


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
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "a special file"


def split_path(path: str) -> list[str]:
    return path.split("/")


class MissingDirectory(FileNotFoundError):
    """A directory on the way does not exist: `parts` is the path resolved so far (ending with the
    missing name), `rest` what came after it, as given."""

    def __init__(self, parts: tuple[str, ...], rest: list[str]):
        super().__init__(errno.ENOENT, "no such directory", "/".join(parts))
        self.parts = parts
        self.rest = rest


@dataclass
class Entry:
    """The last name of a walk: the directory that holds it (a descriptor this Entry owns) and its lstat."""

    dir_fd: int
    name: str  # "." when the walk ended at the root itself
    parts: tuple[str, ...]  # the resolved path beneath the root, one name each (links resolved)
    st: os.stat_result | None  # None: nothing has that name (yet)
    _closed: bool = field(default=False, repr=False)

    @property
    def rel(self) -> str:
        return "/".join(self.parts) or "."

    @property
    def exists(self) -> bool:
        return self.st is not None

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self.dir_fd)

    def __enter__(self) -> Entry:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class Beneath:
    """A root directory held open; every path is taken beneath it by `walk`."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = os.path.realpath(os.fspath(root))
        self.fd = os.open(self.root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Beneath:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def inner(self, path: str) -> str | None:
        """`path` (absolute) as a path beneath the root, or None when it lies elsewhere."""
        norm = os.path.normpath(path)
        for base in {self.root, os.path.normpath(os.path.abspath(self.root))}:
            if norm == base:
                return ""
            if norm.startswith(base.rstrip("/") + "/"):
                return norm[len(base.rstrip("/")) + 1:]
        return None

    def walk(self, path: str, *, follow: bool = True, follow_last: bool = True, create_dirs: bool = False,
             shown: str | None = None, check: Callable[[tuple[str, ...]], None] | None = None) -> Entry:
        """Take `path` (relative to the root, or absolute inside it) one name at a time.

        Symbolic links are resolved here, beneath the root, or refused (`follow=False`, or one that
        leaves the root: PathOutsideRepoError). `follow_last=False` stops at a link in the last
        name instead of following it. `create_dirs` makes missing directories on the way (mode
        0777 & ~umask). `check` sees every resolved path on the way (each directory before it is
        made or entered, and the last name) and may refuse it by raising. Raises FileNotFoundError
        when a directory on the way is missing.
        """
        shown = path if shown is None else shown
        if os.path.isabs(path):
            inner = self.inner(path)
            if inner is None:
                raise PathOutsideRepoError(f"path {shown!r} is outside the root {self.root}")
            path = inner
        pending = list(reversed(split_path(path)))
        stack = [os.dup(self.fd)]
        names: list[str] = []
        links = 0
        try:
            while pending:
                part = pending.pop()
                if part in ("", "."):
                    continue
                if part == "..":
                    if not names:
                        raise PathOutsideRepoError(
                            f"path {shown!r} leads outside the root {self.root} (through .. or a symbolic link)")
                    os.close(stack.pop())
                    names.pop()
                    continue
                last = not pending
                cur = stack[-1]
                try:
                    st: os.stat_result | None = os.stat(part, dir_fd=cur, follow_symlinks=False)
                except FileNotFoundError:
                    st = None
                if st is not None and stat.S_ISLNK(st.st_mode) and (follow_last or not last):
                    if not follow:
                        raise PathOutsideRepoError(
                            f"path {shown!r} goes through a symbolic link ({'/'.join([*names, part])}), which is not followed here")
                    links += 1
                    if links > MAX_LINKS:
                        raise ToolError(f"path {shown!r}: too many levels of symbolic links")
                    target = os.readlink(part, dir_fd=cur)
                    if os.path.isabs(target):
                        inner = self.inner(target)
                        if inner is None:
                            raise PathOutsideRepoError(
                                f"path {shown!r} goes through a symbolic link ({'/'.join([*names, part])} -> {target}) "
                                f"that leads outside the root {self.root}")
                        while len(stack) > 1:
                            os.close(stack.pop())
                        names.clear()
                        target = inner
                    pending.extend(reversed(split_path(target)))
                    continue
                if check is not None:
                    check((*names, part))
                if last:
                    return Entry(os.dup(cur), part, (*names, part), st)
                if st is None:
                    if not create_dirs:
                        raise MissingDirectory((*names, part), list(reversed(pending)))
                    try:
                        os.mkdir(part, 0o777, dir_fd=cur)
                    except FileExistsError:
                        pass
                try:
                    fd = os.open(part, _WALK_FLAGS, dir_fd=cur)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.EMLINK):
                        raise PathOutsideRepoError(
                            f"path {shown!r}: {'/'.join([*names, part])} became a symbolic link while it was opened") from None
                    if exc.errno == errno.ENOTDIR:
                        raise ToolError(f"path {shown!r}: {'/'.join([*names, part])} is not a directory") from None
                    raise
                stack.append(fd)
                names.append(part)
            # the path ended at a directory (the root, a trailing "/", "..", or ".")
            if not names:
                return Entry(os.dup(self.fd), ".", (), os.fstat(self.fd))
            return Entry(os.dup(stack[-2]), names[-1], tuple(names), os.fstat(stack[-1]))
        finally:
            for fd in stack:
                os.close(fd)

    def exists(self, path: str) -> bool:
        try:
            with self.walk(path) as e:
                return e.exists
        except (OSError, ToolError):
            return False


# --- opening what a walk found -----------------------------------------------------------------


def open_regular(entry: Entry, shown: str, *, single_link: bool = True) -> tuple[int, os.stat_result]:
    """A read descriptor for the regular file `entry` names; anything else is refused (ToolError).

    `single_link`: a file with more than one hard link is refused too — its other names may be
    anywhere on the same file system, outside the root, and nothing tells where.
    """
    if entry.st is None:
        raise FileNotFoundError(errno.ENOENT, "file not found", shown)
    check_regular(entry.st, shown, single_link=single_link)
    try:
        fd = os.open(entry.name, _READ_FLAGS, dir_fd=entry.dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise PathOutsideRepoError(f"{shown!r} became a symbolic link while it was opened") from None
        raise
    try:
        st = os.fstat(fd)
        check_regular(st, shown, single_link=single_link)
        if (st.st_dev, st.st_ino) != (entry.st.st_dev, entry.st.st_ino):
            raise ToolError(f"{shown!r} was replaced while it was opened; try again")
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def check_regular(st: os.stat_result, shown: str, *, single_link: bool = True) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{shown!r} is a directory, not a file; use list_files to see what it contains")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"refusing to use {shown!r}: it is {file_kind(st.st_mode)}, not a regular file")
    if single_link and st.st_nlink > 1:
        raise ToolError(
            f"refusing to use {shown!r}: it has {st.st_nlink} hard links, so its content is shared with other names "
            "that may lie outside the repository (nothing tells where). Use a copy of the file instead.")


def read_regular(entry: Entry, shown: str, *, limit: int | None = None, single_link: bool = True) -> bytes:
    """The bytes of the regular file `entry` names (at most `limit`)."""
    fd, _st = open_regular(entry, shown, single_link=single_link)
    with os.fdopen(fd, "rb") as fh:
        return fh.read() if limit is None else fh.read(limit)


def open_dir(entry: Entry, shown: str) -> int:
    """A listable descriptor for the directory `entry` names (the root when its name is ".")."""
    if entry.st is None:
        raise FileNotFoundError(errno.ENOENT, "no such directory", shown)
    if not stat.S_ISDIR(entry.st.st_mode):
        raise ToolError(f"{shown!r} is {file_kind(entry.st.st_mode)}, not a directory")
    try:
        return os.open(entry.name, _LIST_FLAGS, dir_fd=entry.dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
            raise PathOutsideRepoError(f"{shown!r} became a symbolic link while it was opened") from None
        raise


def scan_dir(entry: Entry, shown: str) -> Iterator[os.DirEntry[str]]:
    """The entries of the directory `entry` names, listed through a descriptor (no path is followed)."""
    fd = open_dir(entry, shown)
    try:
        with os.scandir(fd) as it:
            yield from it
    finally:
        os.close(fd)


# --- writing -----------------------------------------------------------------------------------


def current_umask() -> int:
    try:  # Linux: read it without the racy set-and-restore dance
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def temp_name(name: str) -> str:
    """A fresh temporary name beside `name`: the pid (for the stale sweep) and 64 random bits."""
    if len(name.encode("utf-8", "surrogateescape")) > _MAX_SHOWN_NAME:
        name = name[:40]
    return f".{name}{TEMP_MARK}{os.getpid()}-{secrets.token_hex(8)}"


def _fsync_dir(dir_fd: int) -> None:
    try:
        fd = os.open(".", os.O_RDONLY | _DIRECTORY | _CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return  # a directory we cannot open for reading: the rename stands, only less durable
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def create_exclusive(dir_fd: int, name: str) -> tuple[int, str]:
    """A new file with a random temporary name beside `name`, created O_EXCL | O_NOFOLLOW (0600)."""
    for _ in range(16):
        tmp = temp_name(name)
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=dir_fd), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "could not create a temporary file (every name drawn was taken)", name)


def replace_file(dir_fd: int, name: str, data: bytes, mode: int | None = None) -> None:
    """Replace `name` in `dir_fd` with `data` atomically: a crash leaves the old file or the new, never half.

    `mode` is the new file's permission bits (default: what a new file gets, 0666 & ~umask).
    """
    fd, tmp = create_exclusive(dir_fd, name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), (0o666 & ~current_umask()) if mode is None else mode)
            os.fsync(fh.fileno())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    _fsync_dir(dir_fd)


def replace_at(root: str | os.PathLike[str], rel: str, data: bytes, *, mode: int | None = None,
               follow: bool = False) -> None:
    """`replace_file` for `rel` beneath `root`, creating missing directories; no symbolic link on the
    way is followed unless `follow` (then only links that stay beneath the root)."""
    with Beneath(root) as base, base.walk(rel, follow=follow, follow_last=follow, create_dirs=True) as entry:
        if entry.st is not None and not stat.S_ISREG(entry.st.st_mode) and not stat.S_ISLNK(entry.st.st_mode):
            raise ToolError(f"refusing to write {rel!r}: it is {file_kind(entry.st.st_mode)}")
        replace_file(entry.dir_fd, entry.name, data, mode)


def read_at(root: str | os.PathLike[str], rel: str, *, limit: int | None = None, follow: bool = False) -> bytes:
    """The bytes of the regular file `rel` beneath `root` (one hard link only; links as in `replace_at`)."""
    with Beneath(root) as base, base.walk(rel, follow=follow, follow_last=follow) as entry:
        return read_regular(entry, rel, limit=limit)


def read_small(root: str | os.PathLike[str], rel: str, limit: int) -> bytes:
    """A small file of the repository the product reads itself (its config, `.mcp.json`, a test runner's
    config): walked like every tool's path, so a FIFO, a device or a link out of the repository can neither
    hang nor redirect it; more than `limit` bytes is refused (ToolError). FileNotFoundError when missing."""
    data = read_at(root, rel, limit=limit + 1)
    if len(data) > limit:
        raise ToolError(f"{rel!r} is larger than {limit:,} bytes")
    return data


def path_of(root: str | os.PathLike[str], entry: Entry) -> Path:
    return Path(os.path.realpath(os.fspath(root))).joinpath(*entry.parts)
