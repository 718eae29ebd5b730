"""Which folder is the repository: the one rule every front end uses (`find_repo_root`).

The root is the folder every tool is confined to, the sandbox's writable tree and where `.ctxagent/`
lives, so it decides what the agent reads unasked and what an approved command may write. It is
the nearest folder at or above the starting folder that holds `.git`, else the starting folder
itself, with three limits:

- **Folders that are never a project** (`refusal`): the home folder, `/` and every folder above the
  home folder (each holds `.ssh`, `.pgpass`, shell history and `.bashrc`); the system's own folders
  (`/usr`, `/etc`, `/var`, …) and the shared ones (`/tmp`, `/var/tmp`, `/dev/shm`, `/run`, the
  temporary folder and the runtime folder the environment names, and any sticky folder every user
  may write to, the mark of a shared temporary folder: other users' files and their programs'
  sockets live there). Starting in one is refused (RootRefusedError) with how to go on.
- **The walk up stops at such a folder**: its `.git` is never the root of a folder below it. A
  dotfiles repository at `~/.git` does not make the home folder the root of `~/notes`; the start
  folder is the root instead, as if no `.git` were above it.
- **A `.git` above the starting folder that git itself refuses** (`safe.directory`, a repository of
  another user: git's own check, run by context/floor/gitsafe.py) is not a root either; the walk stops
  there in the same way. When git cannot be asked (ctxagent runs no git command in a repository
  whose config includes other files), such a `.git` counts only when the user owns both it and its
  folder, which git would accept. The starting folder's own `.git` is the user's choice and stays
  the root (its git views say why they are off).

Never git's `--show-toplevel`: a repository's config (`core.worktree = ../..`, which survives a tar
or zip, or a `.git` file pointing at a repository whose config says so) would move the root
anywhere, the home folder included; such a repository is refused (GitLocationError, from `open_git`).
"""

from __future__ import annotations

import functools
import os
import pwd
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ctxagent.context.errors import RootRefusedError
from ctxagent.context.floor.gitsafe import GitConfigRefused, GitOwnershipRefused, open_git

# The system's own folders (Linux, macOS): never a project, whatever they hold. Only these folders
# themselves: a project below one (/srv/app, /opt/tool, /tmp/tmp.x1/checkout) is fine.
SYSTEM_FOLDERS = (
    "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt", "/opt",
    "/proc", "/root", "/run", "/sbin", "/snap", "/srv", "/sys", "/usr", "/usr/bin", "/usr/lib", "/usr/local",
    "/usr/share", "/usr/src", "/var", "/var/cache", "/var/lib", "/var/log", "/var/run", "/var/spool", "/nix",
    "/nix/store", "/private", "/private/var", "/Users", "/Volumes", "/System", "/Library", "/Applications",
)
# Shared with other users and their programs (sockets: a tmux server, an X display, an agent).
SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm", "/run/user", "/run/lock", "/var/lock", "/private/tmp")
HOW_TO_GO_ON = ("Start ctxagent in a project's folder (cd into it, or --cwd PATH; from an editor, open the "
                "project's folder), or make one: mkdir NAME && cd NAME && git init.")
# What `ctxagent models` and `ctxagent config` say when they run without a project (`root_or_none`).
NO_PROJECT_NOTE = "not in a project folder (the home folder, /, a system or shared folder): your own settings only"


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))


def home_folders() -> list[Path]:
    """The user's home folder: `$HOME` and the account's own (they differ under `sudo -E` or a changed
    HOME), each as written and resolved. Only absolute values count (an empty HOME is no folder)."""
    found = [os.environ.get("HOME", "")]
    try:
        found.append(pwd.getpwuid(os.geteuid()).pw_dir)
    except (KeyError, OSError):
        pass
    out: list[Path] = []
    for value in found:
        if value and os.path.isabs(value):
            for p in (Path(os.path.normpath(value)), _real(value)):
                if p not in out:
                    out.append(p)
    return out


def _shared_folders() -> set[Path]:
    named = [*SHARED_FOLDERS, tempfile.gettempdir(), os.environ.get("TMPDIR", ""), os.environ.get("XDG_RUNTIME_DIR", "")]
    return {p for v in named if v and os.path.isabs(v) for p in (Path(os.path.normpath(v)), _real(v))}


def _sticky_and_open(folder: Path) -> bool:
    """A folder every user may write to, with the sticky bit: how a shared temporary folder is made."""
    try:
        mode = os.stat(folder).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_ISVTX) and bool(mode & stat.S_IWOTH)


@functools.cache
def _system_folders() -> frozenset[Path]:
    return frozenset(_real(p) for p in SYSTEM_FOLDERS)


@dataclass(frozen=True)
class _Refused:
    """The folders that are never a root, as the environment names them now (HOME, TMPDIR, …)."""

    homes: tuple[Path, ...]
    shared: frozenset[Path]

    @classmethod
    def now(cls) -> _Refused:
        return cls(tuple(home_folders()), frozenset(_shared_folders()))

    def why(self, folder: Path) -> str | None:
        if folder == Path(folder.anchor):
            return "it is the top of the file system, which holds your home folder, not a project."
        for home in self.homes:
            if folder == home:
                return ("it is your home folder, not a project: every file in it (.ssh, .pgpass, shell history, "
                        ".bashrc) would be the repository's, read without asking and written by approved commands.")
            if home.is_relative_to(folder):
                return f"it holds your home folder ({home}), not a project."
        if folder in self.shared or _sticky_and_open(folder):
            return "it is a folder shared with other users and programs (their files and sockets), not a project."
        if folder in _system_folders():
            return "it is a system folder, not a project."
        return None


def refusal(folder: Path) -> str | None:
    """Why `folder` can never be a repository root, or None when it can."""
    return _Refused.now().why(_real(folder))


def refused_message(folder: Path, why: str) -> str:
    return f"refusing to work in {folder}: {why} {HOW_TO_GO_ON}"


def check_root(folder: Path) -> Path:
    """`folder` resolved, or RootRefusedError when it can never be a root (see `refusal`)."""
    folder = _real(folder)
    why = refusal(folder)
    if why is not None:
        raise RootRefusedError(refused_message(folder, why))
    return folder


def _owned_by_user(folder: Path) -> bool:
    try:
        return os.stat(folder).st_uid == os.geteuid() and os.lstat(folder / ".git").st_uid == os.geteuid()
    except OSError:
        return False


def repository_above(start: Path) -> Path | None:
    """The folder at or above `start` whose `.git` makes it the root, or None (see the module's note).

    Raises GitLocationError (a StateDirError) for a repository whose own idea of its work tree is
    another folder (`core.worktree`, a `.git` file pointing elsewhere)."""
    start, refused = _real(start), _Refused.now()
    for folder in (start, *start.parents):
        if refused.why(folder) is not None:
            return None  # a ceiling: neither its .git nor anything above it
        if not os.path.lexists(folder / ".git"):
            continue
        try:
            open_git(folder)
        except GitOwnershipRefused:
            if folder != start:
                return None  # git refuses it: not a root, and nothing above it is looked at
        except GitConfigRefused:  # ctxagent runs no git in it, so git was not asked
            if folder != start and not _owned_by_user(folder):
                return None
        return folder
    return None


def find_repo_root(cwd: Path) -> Path:
    """The repository root for a session started in `cwd`: `repository_above(cwd)`, else `cwd` itself.

    Raises RootRefusedError when that folder can never be a root (the home folder, `/`, a folder above
    the home folder, a system or shared folder), with a message that says how to go on; and
    GitLocationError when the repository says its work tree is elsewhere.
    """
    cwd = _real(cwd)
    return check_root(repository_above(cwd) or cwd)


def root_or_none(cwd: Path) -> Path | None:
    """`find_repo_root(cwd)`, or None when `cwd` can never be a root: for the commands that need no
    project (`ctxagent models`, `ctxagent config`), which then show the user's own settings alone."""
    try:
        return find_repo_root(cwd)
    except RootRefusedError:
        return None

