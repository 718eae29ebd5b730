"""Where user-level and per-repository state live, and the one place that creates `.ctxagent/`.

`CTXAGENT_HOME` relocates everything user-level (tests set it to a temporary directory), so a
test or a sandboxed run never touches the real user's files.

`<repo>/.ctxagent/` is ctxagent's private state (sessions, memory, spill, checkpoints, config). A
repository may not supply it: a `.ctxagent` that git tracks (`git add -f`), that is a symbolic
link, or that holds symbolic links is refused with a clear error instead of being used or
repaired. Why refuse rather than ignore and recreate: the path is taken by the repository's own
files, so recreating it in place would delete tracked files, and moving the state elsewhere for
this one repository would make `.ctxagent/` mean different things to the memory CLI, the MCP
server and other tools. The message says how to untrack it. `ensure_state_dir` is the only code
that creates the folder; it also writes the `.gitignore` that keeps it out of the user's commits.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import platformdirs
from ctxagent.context.errors import StateDirError
from ctxagent.context.floor.gitsafe import tracked_under

APP_NAME = "ctxagent"
STATE_DIR_NAME = ".ctxagent"
STATE_GITIGNORE = "# ctxagent state: sessions, spill files, memory, checkpoints; never committed\n*\n"
_SHOWN_TRACKED = 5

# State folders already checked for being tracked by git in this process (one `git ls-files` each).
_untracked_verified: set[Path] = set()


def _home() -> Path | None:
    value = os.environ.get("CTXAGENT_HOME", "").strip()
    return Path(value).expanduser() if value else None


def user_state_dir() -> Path:
    """Sessions, calibration and the user-level memory: CTXAGENT_HOME if set, else the platform's state dir."""
    home = _home()
    return home if home is not None else Path(platformdirs.user_state_dir(APP_NAME))


def user_config_dir() -> Path:
    """The user config file's folder: CTXAGENT_HOME/config if set, else the platform's config dir."""
    home = _home()
    return home / "config" if home is not None else Path(platformdirs.user_config_dir(APP_NAME))


def project_state_dir(root: Path) -> Path:
    """The per-repository state folder (<root>/.ctxagent): spill files, memory.db, checkpoints.

    Only the path: code that reads or creates anything there goes through `ensure_state_dir`
    (creating) or `check_state_dir` (reading only)."""
    return Path(root) / STATE_DIR_NAME


def check_state_dir(root: Path) -> Path:
    """`<root>/.ctxagent`, refused (StateDirError) when the repository shipped it. Creates nothing."""
    state = project_state_dir(root)
    try:
        st = os.lstat(state)
    except FileNotFoundError:
        return state
    except OSError as exc:
        raise StateDirError(f"cannot access {state}: {exc.strerror or exc}") from exc
    if stat.S_ISLNK(st.st_mode):
        raise StateDirError(
            f"refusing to use {state}: it is a symbolic link (to {os.readlink(state)}), so ctxagent's sessions and "
            f"memory would be written outside the repository. Remove the link (rm {state}) and run ctxagent again."
        )
    if not stat.S_ISDIR(st.st_mode):
        raise StateDirError(f"refusing to use {state}: it is not a directory; move it away and run ctxagent again")
    key = state.resolve()
    if key not in _untracked_verified:
        tracked = tracked_under(Path(root), STATE_DIR_NAME)
        if tracked:
            shown = ", ".join(tracked[:_SHOWN_TRACKED]) + (f" and {len(tracked) - _SHOWN_TRACKED} more" if len(tracked) > _SHOWN_TRACKED else "")
            raise StateDirError(
                f"refusing to use {state}: the repository ships it (git tracks {shown}). ctxagent keeps private "
                "state there (config, sessions, memory, checkpoints) and will not take it from a repository: it "
                "could raise permissions, run programs or plant instructions. If these files are yours, untrack "
                f"them (git -C {root} rm -r --cached {STATE_DIR_NAME} and commit); otherwise delete them."
            )
        _untracked_verified.add(key)
    try:
        links = [e.name for e in os.scandir(state) if e.is_symlink()]
    except OSError as exc:
        raise StateDirError(f"cannot read {state}: {exc.strerror or exc}") from exc
    if links:
        raise StateDirError(
            f"refusing to use {state}: it holds symbolic links ({', '.join(sorted(links))}), which would send "
            "ctxagent's state outside the repository. Remove them and run ctxagent again."
        )
    return state


def ensure_state_dir(root: Path) -> Path:
    """Create `<root>/.ctxagent/` (private to the user) with its `.gitignore`; the one place that does.

    Refuses a shipped folder (see `check_state_dir`); a read-only file system or a full disk is a
    StateDirError that says so, never a traceback.
    """
    state = check_state_dir(root)
    try:
        state.mkdir(mode=0o700, parents=True, exist_ok=True)
        ignore = state / ".gitignore"
        if not ignore.exists():
            ignore.write_text(STATE_GITIGNORE, encoding="utf-8")
    except OSError as exc:
        raise StateDirError(f"cannot create ctxagent's state folder {state}: {describe_os_error(exc)}") from exc
    return state


def ensure_parent(path: Path) -> None:
    """Create the folder that will hold `path`; a `.ctxagent/` on the way is created by ensure_state_dir."""
    path = Path(path)
    for parent in path.parents:
        if parent.name == STATE_DIR_NAME:
            ensure_state_dir(parent.parent)
            break
    path.parent.mkdir(parents=True, exist_ok=True)


def describe_os_error(exc: OSError) -> str:
    """A file-system error in words a user can act on (read-only, disk full, permission)."""
    hints = {
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.ENOSPC: "no space left on the device (disk full)",
        errno.EDQUOT: "disk quota exceeded",
        errno.EFBIG: "file too large (a file-size limit was reached)",
    }
    what = hints.get(exc.errno or 0, exc.strerror or str(exc))
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{what}{where}"


def spill_dir(root: Path) -> Path:
    return project_state_dir(root) / "spill"
