"""Replacing a file so that a crash leaves the old content or the new, never half, and no litter.

`write_atomic` writes a temporary file beside the target, fsyncs it, renames it over the target and
fsyncs the directory (so the rename itself survives a power loss). The temporary file has a name the
tools recognise, `.<name>.ctxagent-tmp-<pid>`: a process killed between the write and the rename
(SIGKILL cannot be caught) leaves one behind, and `sweep_stale_temp_files` removes those whose
process is gone — before every write in that directory, and once per agent over the repository.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from ctxagent.tools.confine import list_repo_files, repo_root

TEMP_MARK = ".ctxagent-tmp-"
_TEMP_NAME = re.compile(r"^\..*" + re.escape(TEMP_MARK) + r"(\d+)$", re.DOTALL)
_MAX_SHOWN_NAME = 180  # bytes of the target's name kept in the temp name (NAME_MAX is 255)


def temp_path(path: Path, pid: int | None = None) -> Path:
    name = path.name
    if len(name.encode("utf-8", "surrogateescape")) > _MAX_SHOWN_NAME:
        name = name[:40]
    return path.with_name(f".{name}{TEMP_MARK}{os.getpid() if pid is None else pid}")


def _pid_alive(pid: int) -> bool:
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
    """A temp file of ours whose writer is gone."""
    m = _TEMP_NAME.match(path.name)
    return m is not None and not _pid_alive(int(m.group(1)))


def sweep_stale_temp_files(paths: Iterable[Path]) -> list[Path]:
    """Remove the stale temp files among `paths` (regular files only); return what was removed."""
    removed = []
    for p in paths:
        try:
            if is_stale_temp(p) and p.is_file() and not p.is_symlink():
                p.unlink()
                removed.append(p)
        except OSError:
            continue
    return removed


def sweep_repository(root: Path) -> list[Path]:
    """Remove stale temp files anywhere in the repository (the files git sees: not ignored ones)."""
    top = repo_root(root)
    files, _ = list_repo_files(top)
    return sweep_stale_temp_files(top / f for f in files if TEMP_MARK in f)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # a directory we cannot open for reading: the rename stands, only less durable
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a crash leaves either the old or the new file, never half."""
    try:
        sweep_stale_temp_files(path.parent.glob(f".*{TEMP_MARK}*"))
    except OSError:
        pass
    tmp = temp_path(path)
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    finally:
        if tmp.exists():
            tmp.unlink()
