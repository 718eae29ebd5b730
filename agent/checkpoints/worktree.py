"""Writing and removing files in the user's working tree for a code rewind.

Every path is repo-relative (POSIX), taken beneath the repository root one name at a time from a
directory descriptor (`context/floor/beneath.py`) with no symbolic link followed at all: a folder
on the way that is a link (or becomes one while the rewind runs) is refused, never written
through, and the last name is replaced, never followed. Files are replaced atomically (a random
temporary name created O_EXCL | O_NOFOLLOW, then a rename in the same directory descriptor), so a
crash never leaves a half-written file and a planted name cannot redirect the write; read-only
files can be restored as git itself would. Nothing is written into `.git/` or `.ctxagent/`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from ctxagent.agent.checkpoints.shadow_git import CheckpointError
from ctxagent.context.errors import CtxagentError
from ctxagent.context.floor.beneath import Beneath, Entry, current_umask, replace_file
from ctxagent.tools.confine import protected_part


def _walk(root: Path, rel: str, *, create_dirs: bool) -> tuple[Beneath, Entry]:
    if protected_part(Path(rel).parts) is not None:
        raise CheckpointError(f"cannot restore {rel}: it lies in git's or ctxagent's own folder")
    base = Beneath(root)
    try:
        return base, base.walk(rel, follow=False, follow_last=False, create_dirs=create_dirs)
    except FileExistsError as exc:
        base.close()
        raise CheckpointError(f"cannot restore {rel}: a folder on the way is a file") from exc
    except CtxagentError as exc:  # a link on the way, or outside the root
        base.close()
        raise CheckpointError(f"cannot restore {rel}: {exc}") from exc
    except BaseException:
        base.close()
        raise


def _clear(entry: Entry) -> None:
    """Remove what stands where a file must go: a symlink, a file, or an empty folder."""
    assert entry.st is not None
    if stat.S_ISDIR(entry.st.st_mode):
        os.rmdir(entry.name, dir_fd=entry.dir_fd)  # raises if not empty (it holds ignored files): the caller skips it
    else:
        os.unlink(entry.name, dir_fd=entry.dir_fd)


def write_entry(root: Path, rel: str, mode: str, data: bytes) -> None:
    """Write a blob as git mode `mode` ("100644", "100755" or "120000") at repo-relative `rel`."""
    base, entry = _walk(root, rel, create_dirs=True)
    with base, entry:
        st = entry.st
        if mode == "120000":
            if st is not None:
                _clear(entry)
            os.symlink(os.fsdecode(data), entry.name, dir_fd=entry.dir_fd)
            return
        if st is not None and stat.S_ISREG(st.st_mode):
            perm = stat.S_IMODE(st.st_mode)
        else:
            perm = 0o666 & ~current_umask()
            if st is not None:
                _clear(entry)
        if mode == "100755":
            perm |= (perm & 0o444) >> 2  # execute wherever read is allowed, as git checkout does
        else:
            perm &= ~0o111
        # a rename replaces the name: a hard link's other names keep their content
        replace_file(entry.dir_fd, entry.name, data, perm)


def remove_path(root: Path, rel: str) -> None:
    """Delete a file or symlink at repo-relative `rel` (never through a symlinked folder)."""
    try:
        base, entry = _walk(root, rel, create_dirs=False)
    except FileNotFoundError:
        return
    except CheckpointError as exc:
        raise OSError(str(exc)) from exc
    with base, entry:
        if entry.st is not None:
            os.unlink(entry.name, dir_fd=entry.dir_fd)


def prune_empty_dirs(root: Path, removed: Iterable[str]) -> None:
    """Remove folders left empty by deletions, bottom-up, never the root itself."""
    folders = {Path(rel).parent for rel in removed}
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        current = folder
        while current.parts:
            try:
                base, entry = _walk(root, current.as_posix(), create_dirs=False)
            except (OSError, CheckpointError):
                break
            with base, entry:
                try:
                    if entry.st is None or not stat.S_ISDIR(entry.st.st_mode):
                        break
                    os.rmdir(entry.name, dir_fd=entry.dir_fd)
                except OSError:
                    break
            current = current.parent
