"""Opening a memory database file: created private to the user, and SQLite errors in words.

The file is made 0600 before SQLite opens it (SQLite gives its -wal and -shm files the database's
mode), and a `.ctxagent/` on the way is created by `ensure_parent`, so it gets its checks and its
`.gitignore`. A damaged, read-only or full database becomes a message that says what to do.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ctxagent.context.errors import CtxagentError, MemoryStoreError
from ctxagent.context.floor.state_paths import describe_os_error, ensure_parent


def create_private(db_path: Path) -> None:
    """Create the folder (through ensure_parent: a `.ctxagent/` gets its checks and .gitignore) and
    the database file, readable by the user only; SQLite gives its -wal / -shm files the same mode."""
    try:
        ensure_parent(db_path)
        fd = os.open(db_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            if os.fstat(fd).st_mode & 0o077:  # made by an older version: keys never land there, still private
                os.fchmod(fd, 0o600)
        finally:
            os.close(fd)
    except OSError as exc:
        raise MemoryStoreError(f"cannot open memory database {db_path}: {describe_os_error(exc)}") from exc
    except CtxagentError as exc:
        raise MemoryStoreError(str(exc)) from exc


def sqlite_problem(exc: sqlite3.Error) -> str:
    text = str(exc)
    if "not a database" in text or "malformed" in text:
        return f"{text} (the file is damaged or not a ctxagent memory database; move it away to start a new one)"
    if "readonly" in text or "read-only" in text:
        return f"{text} (the folder or file is read-only)"
    if "disk is full" in text or "disk I/O" in text:
        return f"{text} (check free disk space)"
    return text
