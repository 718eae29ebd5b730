"""Writing and removing files in the user's working tree for a code rewind.

Every path is repo-relative (POSIX). Nothing is ever written through a symlinked directory or
outside the repository root. Files are replaced atomically (temporary file + rename) so a crash
never leaves a half-written file, and read-only files can be restored as git itself would.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from ctxagent.agent.checkpoints.shadow_git import CheckpointError


def _current_umask() -> int:
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


def _inside(root: Path, path: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(root))
    except ValueError:
        return False
    return True


def _ensure_parent(root: Path, rel: str) -> Path:
    """Create the parent folders of `rel`, refusing symlinks and files on the way."""
    dest = root / rel
    current = root
    for part in Path(rel).parts[:-1]:
        current = current / part
        if os.path.islink(current) or (os.path.lexists(current) and not current.is_dir()):
            raise CheckpointError(f"cannot restore {rel}: {current.relative_to(root)} is not a folder")
        if not current.exists():
            current.mkdir()
    if not _inside(root, dest.parent):
        raise CheckpointError(f"cannot restore {rel}: outside the repository")
    return dest


def _clear(dest: Path) -> None:
    """Remove what stands where a file must go: a symlink, a file, or an empty folder."""
    if os.path.islink(dest) or dest.is_file():
        dest.unlink()
    elif dest.is_dir():
        dest.rmdir()  # raises if not empty (e.g. it holds ignored files): the caller skips the path


def write_entry(root: Path, rel: str, mode: str, data: bytes) -> None:
    """Write a blob as git mode `mode` ("100644", "100755" or "120000") at repo-relative `rel`."""
    dest = _ensure_parent(root, rel)
    if mode == "120000":
        if os.path.lexists(dest):
            _clear(dest)
        os.symlink(os.fsdecode(data), dest)
        return
    if os.path.lexists(dest) and not os.path.islink(dest) and dest.is_file():
        perm = stat.S_IMODE(os.lstat(dest).st_mode)
    else:
        perm = 0o666 & ~_current_umask()
        if os.path.lexists(dest):
            _clear(dest)
    if mode == "100755":
        perm |= (perm & 0o444) >> 2  # execute wherever read is allowed, as git checkout does
    else:
        perm &= ~0o111
    tmp = dest.with_name(f".{dest.name}.ctxagent-{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            os.fchmod(fh.fileno(), perm)
        os.replace(tmp, dest)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def remove_path(root: Path, rel: str) -> None:
    """Delete a file or symlink at repo-relative `rel` (never follows a symlinked folder)."""
    dest = root / rel
    if not _inside(root, dest.parent):
        raise OSError(f"{rel} is outside the repository")
    if os.path.lexists(dest):
        dest.unlink()


def prune_empty_dirs(root: Path, removed: Iterable[str]) -> None:
    """Remove folders left empty by deletions, bottom-up, never the root itself."""
    folders = {Path(rel).parent for rel in removed}
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        current = folder
        while current.parts:
            try:
                (root / current).rmdir()
            except OSError:
                break
            current = current.parent
