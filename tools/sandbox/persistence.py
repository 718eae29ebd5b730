"""What a sandboxed command may not leave behind: files that would run later, outside the sandbox.

A file written inside the sandbox is data until the user runs it. What git, ctxagent, a shell prompt
or the next session would run (or read as config) implicitly must not be writable from inside, in
the repository (workspace-write) as much as anywhere else. `guard()` plans, for one launch:

- read-only: every `.git` below the root (tools/sandbox/dotgit.py finds them: nested repositories,
  submodules, `.git` files) and the git directory a `.git` file points to when it lies in a
  writable root (and a linked work tree's common directory); `.ctxagent/`; `.mcp.json` (ctxagent
  starts its servers next session); what the git config of each of those repositories names
  (tools/sandbox/git_named.py: hooks folders such as husky's `.husky`, included config files,
  fsmonitor, filter, diff, editor, pager, alias and other programs in the tree, the files the
  hook scripts name, a hook manager's config such as `.pre-commit-config.yaml`); and the Python
  environment ctxagent runs from when it lies in the tree (a `.pth` file there runs at ctxagent's
  next start);
- masked (an empty read-only mount, so nothing can be created there; the mount point bwrap makes on
  the host is removed afterwards): a missing `.git` at the root (an unpacked tarball) and in every
  registered submodule folder (`.gitmodules`, gitlinks in the index), a missing `.ctxagent`, a
  missing hooks folder or included config file the config names, a missing git directory a `.git`
  file names.

A read-only mount cannot be removed or renamed over from inside, but a folder above it can be
moved away and a new one made in its place, and nothing stops `git init sub` in a new folder. So
`Guard.finish()` looks again after the command: every `.git` that was not there when the command
started (by inode: a `.git` the command only moved along with its folder is the same one) — or
that appeared while another sandboxed command of this process was running — is moved aside to
`<name>.ctxagent-quarantine` (nothing is deleted); so is a protected path whose folders above it
were replaced, or that a command created where it was missing (`.mcp.json`, a hook manager's
config); a protected symbolic link a command re-pointed is put back. Each move is reported in the
command's output, with how to undo it. A `.git` the user makes while a sandboxed command runs is
taken for its doing too (it can be renamed back once nothing runs). A server's launch (a local MCP
server lives as long as the session), or one that runs longer than any command may
(`LONG_LAUNCH_S`), has the mounts but not the check after it: over hours, the user's own `git
clone` or `git submodule update` would be moved aside.

Not covered: writable roots the user added (`sandbox_writable`) are not scanned for `.git`; a bare
repository made without the name `.git` (git's `safe.bareRepository = explicit` is the user's
defence); project files that a user's hook runs on purpose (`npm test` in a pre-commit hook runs
the tests a command may have changed, as running them by hand would); when ctxagent's own source is
the repository (an editable install of ctxagent worked on by ctxagent), that source.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ctxagent.context.errors import ToolError
from ctxagent.context.floor.state_paths import STATE_DIR_NAME
from ctxagent.tools.confine import PROTECTED_DIRS
from ctxagent.tools.sandbox.dotgit import Ident, ident_of, tree_index
from ctxagent.tools.sandbox.git_named import common_dir, gitdir_of, named_paths, submodule_paths

QUARANTINE_SUFFIX = ".ctxagent-quarantine"
# A launch running longer than this is a server (a local MCP server lives as long as the session),
# not a command (tools/shell.py MAX_TIMEOUT: 600 s; hooks stop sooner): the mounts protect it, but
# the check after it is skipped and it does not make a new `.git` suspect, since over hours the
# user's own `git submodule update` or `git clone` would be taken for its doing.
LONG_LAUNCH_S = 15 * 60  # a backstop: servers say so (`server=True`); this catches a launch never finished
# Files in the root that ctxagent itself runs from next session (agent/mcp/config.py MCP_JSON).
RUN_BY_CTXAGENT = (".mcp.json",)
log = logging.getLogger("ctxagent.sandbox")
log.addHandler(logging.NullHandler())  # never Python's last-resort print over the app's screen


@dataclass(frozen=True)
class _Watch:
    """A protected path to look at after the command: was it replaced, or created?"""

    path: str
    folders: tuple[tuple[str, Ident | None], ...]  # the folders between the root and it, as they were
    existed: bool
    link: str | None  # its target, when it is a symbolic link


@dataclass
class Guard:
    """The mounts that protect one launch, and the check after it (`finish`)."""

    root: str
    args: list[str] = field(default_factory=list)
    created: list[Path] = field(default_factory=list)  # mount points bwrap makes on the host
    before: dict[Ident, str | None] = field(default_factory=dict)  # each .git -> the git directory it named
    watches: list[_Watch] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    done: bool = False
    started: float = field(default_factory=time.monotonic)
    server: bool = False  # a server's launch (MCP): lives as long as the session

    def short(self) -> bool:
        """A command's launch: not a server, and not running longer than any command may."""
        return not self.server and time.monotonic() - self.started <= LONG_LAUNCH_S

    def finish(self) -> list[str]:
        """After the command: remove the mount points, move aside what it planted; what was done, one
        line each (for the command's output)."""
        if self.done:
            return []
        self.done = True
        remove_mount_points(self.created)
        notes = list(self.notes)
        with _active_lock:
            others = _active.get(self.root, [])
            if self in others:
                others.remove(self)
            if not self.short():
                return notes
            try:
                skip = {str(p) for g in others for p in g.created}
                short = [self, *(g for g in others if g.short())]
                notes += _quarantine_new_gits(self.root, short, tree_index(self.root).refresh(), skip)
            except ToolError as exc:
                notes.append(f"sandbox: {exc}")
        for watch in self.watches:
            note = _check_watch(self.root, watch)
            if note:
                notes.append(note)
        for note in notes:
            log.warning("%s", note)
        return notes


_active: dict[str, list[Guard]] = {}  # launches running now, per root
_active_lock = threading.Lock()


def guard(root: str, writable: list[str], home: str, env: dict[str, str], *, server: bool = False) -> Guard:
    """The protections of a workspace-write launch in `root` (resolved) with `writable` its writable
    roots (the root first); `server`: a server's launch (see LONG_LAUNCH_S). Raises ToolError when the root's `.git` or `.ctxagent` is a symbolic link
    (a mount would follow it) or the tree is too large to scan."""
    for name in sorted(PROTECTED_DIRS):
        path = os.path.join(root, name)
        if os.path.islink(path):
            raise ToolError(f"command refused: {path} is a symbolic link, so the sandbox cannot keep it read-only. "
                            'Replace the link with the directory itself, or use sandbox = "read-only".')
    g = Guard(root, server=server)
    with _active_lock:
        running = _active.setdefault(root, [])
        gits = tree_index(root).refresh()
        short = [r for r in running if r.short()]
        g.notes = _quarantine_new_gits(root, short, gits, {str(p) for r in running for p in r.created})
        for path, ident in gits.items():
            g.before[ident] = _gitdir_ident(path)
        running.append(g)
    try:
        _plan(g, gits, writable, home, env)
    except BaseException:
        with _active_lock:
            running.remove(g)
        raise
    return g


def _plan(g: Guard, gits: dict[str, Ident], writable: list[str], home: str, env: dict[str, str]) -> None:
    root = g.root
    ro: set[str] = set()
    masks: dict[str, str] = {}  # path -> "dir" | "file"
    repos: list[tuple[str, str]] = []
    for path, ident in gits.items():
        ro.add(path)
        if ident.kind == "link" and not os.path.exists(path) and _under(os.path.realpath(path), writable):
            masks.setdefault(os.path.realpath(path), "dir")  # a dangling `.git` link: its target cannot be made
        gitdir = gitdir_of(path)
        if gitdir is None:
            continue
        if ident.kind == "dir":
            repos.append((os.path.dirname(path), gitdir))
        for target in (gitdir, common_dir(gitdir)):
            if target and _under(target, writable):
                if os.path.exists(target):
                    ro.add(target)
                else:
                    masks.setdefault(target, "dir")
        if ident.kind != "dir" and os.path.isdir(gitdir):
            repos.append((os.path.dirname(path), gitdir))
    if not os.path.lexists(os.path.join(root, ".git")):
        masks[os.path.join(root, ".git")] = "dir"
    state = os.path.join(root, STATE_DIR_NAME)
    if os.path.exists(state):
        ro.add(state)
    else:
        masks[state] = "dir"
    for name in RUN_BY_CTXAGENT:
        path = os.path.join(root, name)
        if os.path.exists(path):
            ro.add(path)
        else:
            g.watches.append(_Watch(path, (), False, None))  # created by a command: moved aside after
    prefix = os.path.realpath(sys.prefix)
    if _under(prefix, writable):
        ro.add(prefix)
    for work_tree, gitdir in repos:
        for folder in submodule_paths(work_tree, gitdir):
            dot_git = os.path.join(folder, ".git")
            if os.path.isdir(folder) and not os.path.islink(folder) and not os.path.lexists(dot_git) \
                    and _under(folder, [root]):
                masks.setdefault(dot_git, "dir")
        named = named_paths(work_tree, gitdir, writable, home, env)
        ro.update(named.files | named.dirs)
        for path in named.missing_files:
            masks.setdefault(path, "file")
        for path in named.missing_dirs:
            masks.setdefault(path, "dir")
        g.watches += [_watch(root, path, existed=False) for path in sorted(named.unmade)]
    _mounts(g, ro, masks, set(gits))


def _mounts(g: Guard, ro: set[str], masks: dict[str, str], gits: set[str]) -> None:
    """bwrap arguments for `ro` and `masks`, parents before children, nothing below a path already
    covered; and what to look at afterwards."""
    done: set[str] = set()
    for path in sorted({*ro, *masks}, key=lambda p: (p.count("/"), p)):
        if _covered(path, done):
            continue
        if path in ro and os.path.exists(path):
            strict = path in (os.path.join(g.root, ".git"), os.path.join(g.root, STATE_DIR_NAME))
            g.args += ["--ro-bind" if strict else "--ro-bind-try", path, path]
            if path not in gits:
                g.watches.append(_watch(g.root, path, existed=True))
            done.add(path)
        elif path in masks:
            top = _highest_missing(path)
            if top is None:
                continue  # it exists after all (made since): nothing to mask
            if top == path and masks[path] == "file":
                g.args += ["--ro-bind", "/dev/null", path]
            else:
                g.args += ["--tmpfs", top, "--remount-ro", top]
            g.created.append(Path(top))
            g.watches.append(_watch(g.root, top, existed=False))
            done.add(top)


def _covered(path: str, done: set[str]) -> bool:
    """`path` or a folder above it is in `done`."""
    while True:
        if path in done:
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


def _highest_missing(path: str) -> str | None:
    """The highest folder on the way to `path` that does not exist (`path` itself when only it is missing)."""
    if os.path.lexists(path):
        return None
    top = path
    parent = os.path.dirname(top)
    while parent != top and not os.path.lexists(parent):
        top, parent = parent, os.path.dirname(parent)
    return top


def _under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _ident(path: str, follow: bool = False) -> Ident | None:
    try:
        return ident_of(os.stat(path) if follow else os.lstat(path))
    except OSError:
        return None


def _gitdir_ident(dot_git: str) -> str | None:
    gitdir = gitdir_of(dot_git)
    return gitdir if gitdir is None else f"{gitdir}:{_ident(gitdir, follow=True)}"


def _watch(root: str, path: str, *, existed: bool) -> _Watch:
    folders: list[tuple[str, Ident | None]] = []
    parent = os.path.dirname(path)
    while _under(parent, [root]) and parent != root:
        folders.append((parent, _ident(parent)))
        parent = os.path.dirname(parent)
    link = os.readlink(path) if existed and os.path.islink(path) else None
    return _Watch(path, tuple(folders), existed, link)


def _check_watch(root: str, w: _Watch) -> str | None:
    rel = os.path.relpath(w.path, root)
    moved = any(_ident(folder) != ident for folder, ident in w.folders)
    if w.link is not None and not moved:
        try:
            current: str | None = os.readlink(w.path)
        except OSError:
            current = None  # removed, or no longer a link
        if current == w.link:
            return None
        where = quarantine(w.path) if os.path.lexists(w.path) else None
        _restore_link(w)
        return (f"sandbox: a command changed the protected link {rel}; it points to {w.link!r} again"
                + (f" (what the command put there is in {os.path.relpath(where, root)})" if where else ""))
    if not os.path.lexists(w.path) or (w.existed and not moved):
        return None
    why = "was replaced: a command moved a folder above it" if w.existed else "was created by a command"
    return _moved_note(root, rel, why, quarantine(w.path))


def _restore_link(w: _Watch) -> bool:
    if w.link is None or os.path.lexists(w.path):
        return False
    with contextlib.suppress(OSError):
        os.symlink(w.link, w.path)
        return True
    return False


def _quarantine_new_gits(root: str, guards: list[Guard], gits: dict[str, Ident], skip: set[str]) -> list[str]:
    """Move aside every `.git` of `gits` that one of `guards` did not see at its start (or whose git
    directory changed since), but for the paths in `skip` (mount points of launches still running);
    one note each. An empty `.git` folder (a mount point a command moved along with its folder) is
    not a repository and is removed instead. What was moved or removed is taken out of `gits`."""
    if not guards:
        return []
    notes = []
    for path, ident in sorted(gits.items()):
        if path in skip or all(
                ident in g.before and (ident.kind == "dir" or g.before[ident] == _gitdir_ident(path)) for g in guards):
            continue
        del gits[path]
        if ident.kind == "dir":
            with contextlib.suppress(OSError):
                os.rmdir(path)
                continue
        notes.append(_moved_note(root, os.path.relpath(path, root), "appeared while a sandboxed command ran",
                                 quarantine(path), git=True))
    return notes


def _moved_note(root: str, rel: str, why: str, where: str | None, *, git: bool = False) -> str:
    runs = ("git reads a repository's config outside the sandbox (core.fsmonitor, hooks and filters run programs)"
            if git else "git or ctxagent would run or read it outside the sandbox")
    if where is None:
        return f"sandbox: {rel} {why}; {runs}, and it could not be moved aside: remove it before you run git there"
    shown = os.path.relpath(where, root)
    if git:
        return f"sandbox: {rel} {why}; {runs}, so it was moved to {shown}. If it was meant, check its config, then rename it back."
    return (f"sandbox: {rel} {why}; {runs}, so it was moved to {shown}. If it was meant, check it, then rename it back "
            "(or write it with write_file, which shows the change).")


def quarantine(path: str) -> str | None:
    """Rename `path` (never following it) to a free `<path>.ctxagent-quarantine[-N]`; the new path, or None."""
    base = path + QUARANTINE_SUFFIX
    for n in range(1, 1000):
        target = base if n == 1 else f"{base}-{n}"
        if os.path.lexists(target):
            continue
        try:
            os.rename(path, target)
        except OSError:
            return None
        return target
    return None


def remove_mount_points(created: list[Path]) -> None:
    """Remove the empty mount points bwrap left on the host for paths that did not exist."""
    for path in sorted(created, key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):
            if path.is_symlink():
                continue
            if path.is_dir() and not any(path.iterdir()):
                path.rmdir()
            elif path.is_file() and path.stat().st_size == 0:
                path.unlink()
