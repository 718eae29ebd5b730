"""The paths inside the writable root that a repository's git config names: what git would run or
read as config there, outside the sandbox, once the command is over.

For one repository (its work tree and its git directory) this reads every config file git would
read for it — the system and global files, the repository's `config` (and a linked work tree's
common one) and `config.worktree`, and every file they include (`include.path`, `includeIf.*.path`,
whatever the condition: a condition false today, such as `onbranch:`, may hold tomorrow) — with
`git config --file F --list --no-includes` (reading config runs nothing). From them:

- config files: every include target (relative to the file that names it, `~/` expanded);
- directories: `core.hooksPath` (relative to the work tree; husky's `.husky/_` dispatches to the
  scripts of its parent, so a hooks folder named `_` brings its parent) and `init.templateDir`;
- files: every regular file a value names. For the keys that run a program (`PROGRAM_KEYS`:
  fsmonitor, editors, pagers, ssh, diff and merge drivers, filters, credential helpers, gpg,
  aliases, ...) any word of the value that names a file (`python3 fsmon.py` names `fsmon.py`); for
  the rest, words that look like paths (with a `/`, or starting with `.` or `~`). Words are the
  value split at blanks, quotes, shell operators, `=` and `:` (`--config=.pre-commit-config.yaml`,
  an alias's `-c core.pager=./x`), so the reading errs on the side of protecting more;
- the same kind of words in the hook scripts of the repository's hooks folder (a hook that runs
  `./scripts/check.sh` names it), and the config files of the hook manager a hook belongs to
  (`HOOK_MANAGERS`: pre-commit's `.pre-commit-config.yaml`, lefthook's `lefthook.yml`, a husky
  hook's lint-staged config, ...), whose entries are programs the user's `git commit` runs. (A
  `lint-staged` key in package.json is not covered: package.json stays writable for npm.)

Relative words resolve against the work tree, where git runs hooks, filters and `!` aliases. Only
paths inside a writable root count (the rest of the file system is read-only anyway). Files and
folders that exist are kept read-only; a missing include target or hooks folder is masked so a
command cannot create it, and a hook manager's missing config is moved aside if a command makes it. Results are cached per config file by its inode, size and times.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ctxagent.context.floor.gitsafe import run_git

# Keys whose value git runs as a program (or a shell command), as `git config --list` spells them.
PROGRAM_KEYS = re.compile(
    r"^(core\.(fsmonitor|sshcommand|editor|pager|askpass|gitproxy|alternaterefscommand)"
    r"|sequence\.editor|pager\..+|alias\..+|diff\.external|diff\..+\.(command|textconv)"
    r"|(difftool|mergetool)\..+\.(cmd|path)|merge\..+\.driver|filter\..+\.(clean|smudge|process)"
    r"|credential\.(.+\.)?helper|gpg\.(.+\.)?program|gpg\.ssh\.defaultkeycommand|interactive\.difffilter"
    r"|sendemail\..+|(web|browser\..+|man\..+)\.(browser|cmd|path)|trailer\..+\.(cmd|command)"
    r"|submodule\..+\.update|uploadpack\.packobjectshook|remote\..+\.(uploadpack|receivepack))$")
INCLUDE_KEY = re.compile(r"^include(if\..+)?\.path$")
DIR_KEYS = ("core.hookspath", "init.templatedir")
MAX_CONFIG_BYTES = 1 << 20  # a larger "config" is protected whole and not read
MAX_HOOK_BYTES = 1 << 16
MAX_INCLUDE_DEPTH = 10  # git's own limit
_WORDS = re.compile(r"[^\s'\"`;&|<>()$=:!,{}]+")
# Hook managers whose installed hook reads a config file of the work tree that names the programs
# to run: what their hooks say (how a hook is recognised), and those files.
HOOK_MANAGERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "pre-commit": (("pre-commit.com", "hook-impl"), (".pre-commit-config.yaml", ".pre-commit-config.yml")),
    "lefthook": (("lefthook",), ("lefthook.yml", "lefthook.yaml", ".lefthook.yml", ".lefthook.yaml", "lefthook-local.yml",
                                 ".lefthook-local.yml", ".config/lefthook.yml", ".config/lefthook.yaml")),
    "overcommit": (("overcommit",), (".overcommit.yml",)),
    "lint-staged": (("lint-staged",), (".lintstagedrc", ".lintstagedrc.json", ".lintstagedrc.yaml", ".lintstagedrc.yml",
                                       ".lintstagedrc.js", ".lintstagedrc.mjs", ".lintstagedrc.cjs", "lint-staged.config.js",
                                       "lint-staged.config.mjs", "lint-staged.config.cjs")),
}


@dataclass
class Named:
    """What the config names inside the writable roots: resolved paths."""

    files: set[str] = field(default_factory=set)  # existing: kept read-only
    dirs: set[str] = field(default_factory=set)  # existing: kept read-only
    missing_files: set[str] = field(default_factory=set)  # include targets that do not exist: masked
    missing_dirs: set[str] = field(default_factory=set)  # a hooks folder that does not exist: masked
    unmade: set[str] = field(default_factory=set)  # a hook manager's config not there yet: moved aside if made


_cache: dict[tuple[str, int, int, int, int, int], list[tuple[str, str]]] = {}


def config_entries(path: str) -> list[tuple[str, str]] | None:
    """(key, value) pairs of one config file, includes not followed; [] when it does not exist, None
    when it cannot be read as config (not a regular file, too large, invalid): then it is protected
    whole and nothing in it is followed."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_CONFIG_BYTES:
        return None
    key = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if key in _cache:
        return _cache[key]
    try:
        out = run_git(["config", "--file", path, "--no-includes", "--list", "-z"], timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    pairs = []
    for item in out.stdout.split(b"\0"):
        if item:
            k, _, v = os.fsdecode(item).partition("\n")
            pairs.append((k, v))
    if len(_cache) > 4096:
        _cache.clear()
    _cache[key] = pairs
    return pairs


def words(value: str) -> set[str]:
    """The words of a config value or a script line that may be paths (an over-approximation)."""
    out = set(_WORDS.findall(value))
    try:
        out.update(w for token in shlex.split(value, comments=False) for w in (token, *token.split("=")))
    except ValueError:
        pass  # unbalanced quotes: the regex's words stand
    return {w.lstrip("!") for w in out if w.lstrip("!") and not w.startswith("-")}


def _pathlike(word: str) -> bool:
    return "/" in word or word.startswith((".", "~"))


def _resolve(word: str, base: str, home: str) -> str:
    if word == "~" or word.startswith("~/"):
        word = home.rstrip("/") + word[1:]
    return os.path.realpath(os.path.join(base, word))


def _inside(path: str, roots: list[str]) -> bool:
    """Strictly below one of `roots` (a root itself is never "named": protecting it would stop every write)."""
    return any(path.startswith(r.rstrip("/") + "/") for r in roots)


def global_config_files(home: str, env: dict[str, str]) -> list[str]:
    """The system and global files git reads for every repository (more than one may apply)."""
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files = ["/etc/gitconfig", os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")]
    files += [env[name] for name in ("GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL") if env.get(name)]
    return files


def repo_config_files(git_dir: str) -> list[str]:
    """The repository's own config files: `config`, `config.worktree`, and the common directory's."""
    files = [os.path.join(git_dir, "config"), os.path.join(git_dir, "config.worktree")]
    common = common_dir(git_dir)
    if common is not None:
        files += [os.path.join(common, "config"), os.path.join(common, "config.worktree")]
    return files


def read_head(path: str, limit: int) -> bytes | None:
    """The first `limit` bytes of the regular file `path`; None for anything else. Opened without
    blocking, so a FIFO put in a file's place is refused, never waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def common_dir(git_dir: str) -> str | None:
    """A linked work tree's common git directory (its `commondir` file), resolved."""
    data = read_head(os.path.join(git_dir, "commondir"), 4096)
    rel = os.fsdecode(data).strip() if data else ""
    return os.path.realpath(os.path.join(git_dir, rel)) if rel else None


def named_paths(work_tree: str, git_dir: str, roots: list[str], home: str, env: dict[str, str]) -> Named:
    """What the config of the repository at `work_tree` (database `git_dir`) names inside `roots`."""
    named = Named()
    hooks_dir = os.path.join(common_dir(git_dir) or git_dir, "hooks")
    seen: set[str] = set()
    pending = [(f, 0) for f in (*global_config_files(home, env), *repo_config_files(git_dir))]
    while pending:
        path, depth = pending.pop(0)
        if path in seen:
            continue
        seen.add(path)
        entries = config_entries(path)
        if entries is None:
            if _inside(os.path.realpath(path), roots):
                named.files.add(os.path.realpath(path))
            continue
        for key, value in entries:
            if INCLUDE_KEY.match(key):
                target = _resolve(value, os.path.dirname(path), home)
                if _inside(target, roots):
                    (named.files if os.path.exists(target) else named.missing_files).add(target)
                if depth < MAX_INCLUDE_DEPTH:
                    pending.append((target, depth + 1))
            elif key in DIR_KEYS:
                folder = _resolve(value, work_tree, home)
                if key == "core.hookspath":
                    hooks_dir = folder
                if not _inside(folder, roots):
                    continue
                if os.path.isdir(folder):
                    named.dirs.add(folder)
                    if os.path.basename(folder) == "_" and _inside(os.path.dirname(folder), roots):
                        named.dirs.add(os.path.dirname(folder))  # husky: `_/h` runs the scripts beside `_`
                elif not os.path.lexists(folder):
                    named.missing_dirs.add(folder)
            else:
                program = bool(PROGRAM_KEYS.match(key))
                _add_files(named, (w for w in words(value) if program or _pathlike(w)), work_tree, roots, home)
    _add_hook_words(named, hooks_dir, work_tree, roots, home)
    if os.path.basename(hooks_dir) == "_":  # husky: the scripts beside `_` are the hooks `_/h` runs
        _add_hook_words(named, os.path.dirname(hooks_dir), work_tree, roots, home)
    return named


def _add_files(named: Named, candidates: Iterable[str], base: str, roots: list[str], home: str) -> None:
    for word in candidates:
        target = _resolve(word, base, home)
        if _inside(target, roots) and os.path.isfile(target):
            named.files.add(target)


def _add_hook_words(named: Named, hooks_dir: str, work_tree: str, roots: list[str], home: str) -> None:
    """Path-like words of the hook scripts in `hooks_dir` that name files in the tree."""
    try:
        entries = list(os.scandir(hooks_dir))
    except OSError:
        return
    for entry in entries:
        data = None if entry.name.endswith(".sample") else read_head(entry.path, MAX_HOOK_BYTES)
        if not data:
            continue
        text = os.fsdecode(data)
        _add_files(named, (w for w in words(text) if _pathlike(w)), work_tree, roots, home)
        for signatures, files in HOOK_MANAGERS.values():
            if any(sign in text for sign in signatures):
                for name in files:
                    path = os.path.join(work_tree, name)
                    if os.path.isfile(path) and _inside(os.path.realpath(path), roots):
                        named.files.add(os.path.realpath(path))
                    elif not os.path.lexists(path) and _inside(path, roots):
                        named.unmade.add(path)


def gitdir_of(dot_git: str) -> str | None:
    """The git directory a `.git` names: itself (a folder), or the `gitdir:` of a `.git` file; resolved.
    None when it is neither (or unreadable)."""
    if os.path.isdir(dot_git):
        return os.path.realpath(dot_git)
    data = read_head(dot_git, 4096)
    first = os.fsdecode(data).splitlines() if data else []
    if not first or not first[0].startswith("gitdir:"):
        return None
    return os.path.realpath(os.path.join(os.path.dirname(dot_git), first[0][len("gitdir:"):].strip()))


def submodule_paths(work_tree: str, git_dir: str) -> list[str]:
    """Registered submodule folders of a repository: `.gitmodules`' paths and the index's gitlinks."""
    out: set[str] = set()
    for key, value in config_entries(os.path.join(work_tree, ".gitmodules")) or []:
        if key.startswith("submodule.") and key.endswith(".path") and value:
            out.add(value)
    out.update(_gitlinks(git_dir))
    return sorted(os.path.normpath(os.path.join(work_tree, p)) for p in out if not os.path.isabs(p) and ".." not in Path(p).parts)


_gitlink_cache: dict[tuple[str, int, int, int], list[str]] = {}


def _gitlinks(git_dir: str) -> list[str]:
    """Paths the index records as gitlinks (mode 160000), read from the index file by `git ls-files`
    with the repository's work tree left out (no refresh, no fsmonitor, nothing run)."""
    index = os.path.join(git_dir, "index")
    try:
        st = os.stat(index)
    except OSError:
        return []
    key = (index, st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _gitlink_cache:
        links: list[str] = []
        try:
            out = run_git(["ls-files", "--stage", "-z"], env={"GIT_DIR": git_dir, "GIT_INDEX_FILE": index}, cwd="/",
                          timeout=60)
            for item in out.stdout.split(b"\0") if out.returncode == 0 else []:
                meta, _, name = item.partition(b"\t")
                if meta.startswith(b"160000 "):
                    links.append(os.fsdecode(name))
        except (OSError, subprocess.TimeoutExpired):
            pass
        if len(_gitlink_cache) > 256:
            _gitlink_cache.clear()
        _gitlink_cache[key] = links
    return _gitlink_cache[key]
