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

An untracked `.ctxagent/` can come with the repository too: an archive carries it, with a planted
`memory.db` constraint, session logs to `--continue`, spill files. So ctxagent marks the folders
it makes and uses no other. Marking: a random 128-bit id in `.ctxagent/state-id`, and a record of
that id in the user's own state folder (`<user state>/state-folders/<id>.json`) with the inode
of the `.ctxagent/` it was written for. An archive can carry a `state-id` file but not the
user's record, and a copied id does not match: extracting makes a new directory, with a new
inode. (Not the device number: btrfs and some network file systems give a different one after a
reboot; the inode stays, and moving the repository within its file system keeps it.) A folder
that holds nothing that could steer the agent (only `config.toml`, whose security-relevant keys
agent/trust.py screens, `.gitignore`, and a `commands/` folder of prompt templates) is adopted, so a
`config.toml` or a command the user wrote by hand before the first run keeps working. Any other unmarked folder is refused with a message that says
how to accept it (`ctxagent trust --state`, which calls `accept_state_dir`) or remove it. Every
entry point goes through `check_state_dir`: the agent and the app (config loading, the session),
`ctxagent memory`, `ctxagent mcp`, `report` / `inspect` / `sessions`, the rewind (its checkpoints).
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import stat
from pathlib import Path

import platformdirs
from ctxagent.context.errors import CtxagentError, StateDirError
from ctxagent.context.floor.beneath import read_at, replace_at
from ctxagent.context.floor.gitsafe import tracked_under

APP_NAME = "ctxagent"
STATE_DIR_NAME = ".ctxagent"
STATE_GITIGNORE = "# ctxagent state: sessions, spill files, memory, checkpoints; never committed\n*\n"
STATE_ID_NAME = "state-id"  # the folder's mark: see the module's docstring
REGISTRY_DIR_NAME = "state-folders"
# What a folder may hold and still be adopted unmarked: nothing in it steers the agent unscreened.
# A session's sub-agents (agent/subagents/) keep their logs in this folder, beside the session's own.
SUBAGENTS_FOLDER = "subagents"
ADOPTABLE = frozenset({".gitignore", "config.toml", STATE_ID_NAME})
# ...and folders of plain files that are text the user sees before it acts: `commands/` holds prompt
# templates (agent/custom_commands.py), shown expanded and confirmed before their first run.
ADOPTABLE_FOLDERS = frozenset({"commands"})
_ID = re.compile(r"[0-9a-f]{32}")
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


def sessions_dir(root: Path) -> Path:
    """Where a repository's session logs live (`.ctxagent/sessions/`)."""
    return project_state_dir(root) / "sessions"


def check_state_dir(root: Path) -> Path:
    """`<root>/.ctxagent`, refused (StateDirError) when the repository shipped it. Creates nothing."""
    state = _check_structure(root)
    if os.path.lexists(state) and not is_marked(state) and not adoptable(state):
        raise StateDirError(
            f"refusing to use {state}: ctxagent did not create it (there is no record of it in "
            f"{registry_dir()}), so it may have come with the repository, in an archive or a copy, and its "
            "memory, sessions and checkpoints would steer the agent. If it is yours (made by an earlier ctxagent, "
            f"or moved here from another disk), accept it: ctxagent trust --state {root}. Otherwise delete it "
            f"(rm -rf {state}) and ctxagent makes a new one."
        )
    return state


def _check_structure(root: Path) -> Path:
    """The refusals no acceptance lifts: a symbolic link, not a directory, tracked by git, links inside."""
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


def registry_dir() -> Path:
    """Where the user's records of the state folders ctxagent made live (never inside a repository)."""
    return user_state_dir() / REGISTRY_DIR_NAME


def _state_id(state: Path) -> str | None:
    """The id in `state/state-id`, read without following a link (None when absent or malformed)."""
    try:
        data = read_at(state, STATE_ID_NAME, limit=256)
    except (OSError, CtxagentError):
        return None
    text = data.decode("ascii", "replace").strip()
    return text if _ID.fullmatch(text) else None


def is_marked(state: Path) -> bool:
    """Whether `state` is a folder ctxagent made: its id is on record, for this very directory (inode)."""
    ident = _state_id(state)
    if ident is None:
        return False
    try:
        record = json.loads((registry_dir() / f"{ident}.json").read_text(encoding="utf-8"))
        return int(record["inode"]) == os.lstat(state).st_ino
    except (OSError, ValueError, KeyError, TypeError):
        return False


def adoptable(state: Path) -> bool:
    """An unmarked folder that holds nothing that could steer the agent: only ADOPTABLE regular files
    and ADOPTABLE_FOLDERS of regular files (no links, no deeper folders)."""
    try:
        with os.scandir(state) as it:
            return all(e.name in ADOPTABLE and e.is_file(follow_symlinks=False)
                       or e.name in ADOPTABLE_FOLDERS and e.is_dir(follow_symlinks=False) and _plain_files(e.path)
                       for e in it)
    except OSError:
        return False


def _plain_files(folder: str) -> bool:
    with os.scandir(folder) as it:
        return all(e.is_file(follow_symlinks=False) for e in it)


def _mark(root: Path, state: Path) -> None:
    """Give `state` a new id and record it in the user's state folder (the record first: a crash in
    between leaves an unused record, never a mark without one)."""
    ident = secrets.token_hex(16)
    reg = registry_dir()
    reg.mkdir(parents=True, exist_ok=True, mode=0o700)
    record = {"root": str(root), "inode": os.lstat(state).st_ino}
    (reg / f"{ident}.json").write_text(json.dumps(record) + "\n", encoding="utf-8")
    replace_at(state, STATE_ID_NAME, (ident + "\n").encode("ascii"), mode=0o600)  # replaces a planted one, link or not


def accept_state_dir(root: Path) -> Path:
    """Take an existing `<root>/.ctxagent/` as ctxagent's own (`ctxagent trust --state`): the checks
    that no acceptance lifts (tracked by git, a symbolic link) still apply."""
    state = project_state_dir(root)
    if not os.path.lexists(state):
        raise StateDirError(f"there is no {state} to accept")
    _check_structure(root)
    if not is_marked(state):
        try:
            _mark(Path(root), state)
        except OSError as exc:
            raise StateDirError(f"cannot mark {state} as ctxagent's: {describe_os_error(exc)}") from exc
    return state


def ensure_state_dir(root: Path) -> Path:
    """Create `<root>/.ctxagent/` (private to the user) with its `.gitignore` and its mark; the one place that does.

    Refuses a shipped folder (see `check_state_dir`), and adopts (marks) an unmarked one that holds
    nothing that steers the agent; a read-only file system or a full disk is a StateDirError that
    says so, never a traceback.
    """
    state = check_state_dir(root)
    try:
        if not os.path.lexists(state):
            state.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not is_marked(state):
            _mark(Path(root), state)
        ignore = state / ".gitignore"
        if not os.path.lexists(ignore):
            replace_at(state, ".gitignore", STATE_GITIGNORE.encode("utf-8"))
    except OSError as exc:
        raise StateDirError(f"cannot create ctxagent's state folder {state}: {describe_os_error(exc)}") from exc
    return state


def forget_state_dir(root: Path) -> None:
    """Drop the user's record of `<root>/.ctxagent/` (before the repository is deleted: a throwaway
    one, the demo's), so no record outlives its folder. Nothing to do when there is none."""
    ident = _state_id(project_state_dir(root))
    if ident is not None:
        (registry_dir() / f"{ident}.json").unlink(missing_ok=True)


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
