"""Every `.git` below the writable root, kept current without walking the whole tree per command.

A `.git` anywhere in the tree is a repository git will use: the user's `git status` in the
superproject recurses into a registered submodule's, a shell prompt with a git segment runs git in
whatever folder the user enters, and `git add -A` records an embedded repository as a gitlink. Its
config can name programs (`core.fsmonitor`, hooks, filters). So the sandbox keeps every `.git`
below the root read-only while a command runs and moves aside any `.git` a command created
(tools/sandbox/persistence.py); this module only finds them.

The first look at a root walks it whole (one `scandir` and one `lstat` per folder, file names only:
nothing is opened or read, no link is followed, and a `.git` is never entered). After that a folder
is listed again only when its `ctime` changed: creating, removing or renaming an entry updates the
folder's `ctime`, which, unlike `mtime`, no process can set back. So each later look costs one
`lstat` per known folder, and a new folder is found from its parent, whose `ctime` its creation
changed. A folder whose `ctime` was within `RECENT_NS` of the clock when it was listed is listed
again at the next look whatever its `ctime` says then, since the clock's tick may not separate a
change made just after the listing from the listing itself.

Names are compared as a case-insensitive file system would (`.GIT`, `git~1`: tools/confine.py's
`fold_name`), so a tree on such a mount is covered too. The walk stops past `MAX_FOLDERS` folders
with an error rather than descend forever (bind-mount loops, a runaway tree).
"""

from __future__ import annotations

import os
import stat
import threading
import time
from dataclasses import dataclass

from ctxagent.context.errors import ToolError
from ctxagent.tools.confine import GIT_SPELLINGS, fold_name

MAX_FOLDERS = 500_000  # some 100 MB of index at most
RECENT_NS = 2_000_000_000


@dataclass(frozen=True)
class Ident:
    """What a path was: its inode, and the kind of entry ("dir", "file", "link" or "other")."""

    dev: int
    ino: int
    kind: str


def ident_of(st: os.stat_result) -> Ident:
    mode = st.st_mode
    kind = ("dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "link" if stat.S_ISLNK(mode)
            else "other")
    return Ident(st.st_dev, st.st_ino, kind)


def is_git_name(name: str) -> bool:
    """`.git` as git or a case-insensitive file system would read the name."""
    if name == ".git":
        return True
    if not (name[:1] in ".gG" or not name.isascii()):
        return False  # the cheap test first: the scan sees every name of the tree
    return fold_name(name) in GIT_SPELLINGS


@dataclass(slots=True)
class _Folder:
    dev: int
    ino: int
    ctime: int
    recent: bool
    gits: tuple[tuple[str, Ident], ...] = ()  # (name, what it is) of the `.git` entries in it


class TreeIndex:
    """The folders below one root and the `.git` entries in them, as of the last `refresh`."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.folders: dict[str, _Folder] = {}
        self.lock = threading.Lock()

    def refresh(self) -> dict[str, Ident]:
        """Bring the index up to date and return every `.git` entry below the root (path -> Ident)."""
        with self.lock:
            if not self.folders:
                try:
                    st = os.lstat(self.root)
                except OSError:
                    return {}
                self._walk(self.root, st)
            else:
                self._update()
            return {os.path.join(path, name): ident for path, f in self.folders.items() for name, ident in f.gits}

    def _update(self) -> None:
        changed: list[tuple[str, os.stat_result]] = []
        gone: set[str] = set()
        for path, f in list(self.folders.items()):
            if gone and _under_any(path, gone):
                continue
            try:
                st = os.lstat(path)
            except OSError:
                st = None
            if st is None or not stat.S_ISDIR(st.st_mode):
                gone.add(path)
                continue
            if f.recent or (st.st_dev, st.st_ino, st.st_ctime_ns) != (f.dev, f.ino, f.ctime):
                changed.append((path, st))
        if gone:
            for path in [p for p in self.folders if p in gone or _under_any(p, gone)]:
                del self.folders[path]
        for path, st in changed:
            if path in self.folders or path == self.root:
                self._walk(path, st)

    def _walk(self, top: str, top_st: os.stat_result) -> None:
        """List `top` and every folder below it that the index does not know yet."""
        stack = [(top, top_st)]
        while stack:
            path, st = stack.pop()
            gits: list[tuple[str, Ident]] = []
            subdirs: list[str] = []
            try:
                with os.scandir(path) as entries:
                    for entry in entries:
                        if is_git_name(entry.name):
                            try:
                                gits.append((entry.name, ident_of(entry.stat(follow_symlinks=False))))
                            except OSError:
                                pass
                        elif entry.is_dir(follow_symlinks=False):
                            subdirs.append(entry.path)
            except OSError:
                pass  # unreadable: nothing to list (a command runs as the same user and cannot list it either)
            now = time.time_ns()
            self.folders[path] = _Folder(st.st_dev, st.st_ino, st.st_ctime_ns, st.st_ctime_ns >= now - RECENT_NS, tuple(gits))
            if len(self.folders) > MAX_FOLDERS:
                self.folders.clear()
                raise ToolError(
                    f"command refused: {self.root} holds more than {MAX_FOLDERS:,} folders, too many for the sandbox "
                    "to find every .git below it (each is kept read-only while a command runs). Start ctxagent in "
                    'a smaller folder, or use sandbox = "read-only".')
            for sub in subdirs:
                if sub in self.folders:
                    continue  # known: `_update` looks at it on its own
                try:
                    sub_st = os.lstat(sub)
                except OSError:
                    continue
                if stat.S_ISDIR(sub_st.st_mode):
                    stack.append((sub, sub_st))


def _under_any(path: str, tops: set[str]) -> bool:
    parent = os.path.dirname(path)
    while parent and parent != path:
        if parent in tops:
            return True
        path, parent = parent, os.path.dirname(parent)
    return False


_indexes: dict[str, TreeIndex] = {}
_indexes_lock = threading.Lock()


def tree_index(root: str) -> TreeIndex:
    """The index of `root` (a resolved path), one per root for the life of the process."""
    with _indexes_lock:
        index = _indexes.get(root)
        if index is None:
            index = _indexes[root] = TreeIndex(root)
        return index
