"""Replacing a file so that a crash leaves the old content or the new, never half, and no litter.

`replace_in_repo` writes what a `walk_repo(for_write=True)` found (tools/confine.py): a temporary
file beside the target, created with a random name, `O_CREAT | O_EXCL | O_NOFOLLOW`, in the
target's directory descriptor (`context/floor/beneath.py`, `replace_file`), fsynced, renamed over
the target within that descriptor, and the directory fsynced (so the rename itself survives a power
loss). A predictable name (`.<name>.ctxagent-tmp-<pid>`) let a repository plant symbolic links
under every pid and turn a write into an overwrite of `~/.bashrc`; a random name created
exclusively cannot be planted, and a planted one only makes another name be drawn.

The name still carries the pid, `.<name>.ctxagent-tmp-<pid>-<random>`: a process killed between
the write and the rename (SIGKILL cannot be caught) leaves one behind, and `sweep_temp_files`
removes those whose process is gone — before every write in that directory, and once per agent
over the repository (`sweep_repository`). Only regular files are removed: a planted link or
folder with such a name is not ours.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from ctxagent.context.errors import ToolError
from ctxagent.context.floor.beneath import TEMP_MARK, Entry, file_kind, replace_file
from ctxagent.tools.confine import quote, repo_root, walk_repo
from ctxagent.tools.listing import list_repo_files

# `.<name>.ctxagent-tmp-<pid>[-<random>]`: the random part since the names stopped being
# predictable; the older form is still swept.
_TEMP_NAME = re.compile(r"^\..*" + re.escape(TEMP_MARK) + r"(\d+)(?:-[0-9a-f]{16})?$", re.DOTALL)


def temp_pid(name: str) -> int | None:
    """The writer's pid in one of our temporary names, else None."""
    m = _TEMP_NAME.match(name)
    return int(m.group(1)) if m else None


def pid_alive(pid: int) -> bool:
    """Whether process `pid` still runs (ours always does; someone else's live one counts)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def is_stale_temp(path: Path) -> bool:
    """A temp file name of ours whose writer is gone."""
    pid = temp_pid(path.name)
    return pid is not None and not pid_alive(pid)


def sweep_temp_files(dir_fd: int) -> list[str]:
    """Remove the temporary files of dead writers in the directory `dir_fd`; returns the names removed."""
    listing = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        with os.scandir(listing) as it:
            names = [e.name for e in it if TEMP_MARK in e.name]
    finally:
        os.close(listing)
    removed = []
    for name in names:
        pid = temp_pid(name)
        if pid is None or pid_alive(pid):
            continue
        try:
            if stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                os.unlink(name, dir_fd=dir_fd)
                removed.append(name)
        except OSError:
            continue
    return removed


def sweep_repository(root: Path) -> list[Path]:
    """Remove stale temp files anywhere in the repository (the files git sees: not ignored ones)."""
    top = repo_root(root)
    files, _ = list_repo_files(top)
    removed = []
    for rel in files:
        if TEMP_MARK not in rel or temp_pid(rel.rsplit("/", 1)[-1]) is None:
            continue
        try:
            with walk_repo(top, rel, for_write=True) as entry:
                if entry.st is not None and stat.S_ISREG(entry.st.st_mode) and is_stale_temp(Path(entry.name)):
                    os.unlink(entry.name, dir_fd=entry.dir_fd)
                    removed.append(top / rel)
        except (OSError, ToolError):
            continue
    return removed


def replace_in_repo(entry: Entry, data: bytes) -> None:
    """Replace the file an Entry (from `walk_repo(for_write=True)`) names, with the old file's
    permissions (a new file gets 0666 & ~umask). Refused: anything but a regular file, and a file
    with more than one hard link (tools/confine.py says why)."""
    mode = None
    if entry.st is not None:
        if stat.S_ISDIR(entry.st.st_mode):
            raise ToolError(f"{quote(entry.rel)} is a directory, not a file")
        if not stat.S_ISREG(entry.st.st_mode):
            raise ToolError(f"refusing to write {quote(entry.rel)}: it is {file_kind(entry.st.st_mode)}, not a regular file")
        if entry.st.st_nlink > 1:
            raise ToolError(
                f"refusing to write {quote(entry.rel)}: it has {entry.st.st_nlink} hard links, so its content is shared "
                "with other names that may lie outside the repository (nothing tells where)")
        mode = stat.S_IMODE(entry.st.st_mode)
    try:
        sweep_temp_files(entry.dir_fd)
    except OSError:
        pass
    replace_file(entry.dir_fd, entry.name, data, mode)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace the file at `path` (its directory taken as the root: no link on the way is followed)."""
    path = Path(path)
    with walk_repo(path.parent, path.name, for_write=False) as entry:
        replace_in_repo(entry, data)
