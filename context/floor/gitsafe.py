"""Every git command ctxagent runs is built here, so a repository's own git settings never run a program.

A repository is untrusted input, and so is its `.git/config` (a tarball can ship one) and anything
under `.ctxagent/` (a shipped `shadow.git`). git runs programs named in config for ordinary,
read-only looking commands: `core.fsmonitor` on any index refresh (`status`, `add`, `diff`), hooks
on `update-ref` (reference-transaction) and commits, `filter.<driver>.clean/smudge/process` when it
reads file contents, textconv and external diff drivers on `diff`, the pager, `gpg.program` when a
commit is signed or a signature shown, `core.sshCommand` and credential helpers on a transport.
`git_command` turns all of those off with `-c` options, which override every config file;
`git_env` drops inherited variables that would point git at another repository.

Which repository, and which work tree, is never git's choice. `open_git(root)` takes the root
ctxagent chose (the directory holding `.git`, context/floor/roots.py) and the repository database that
`.git` is or points at (`gitdir:` in a `.git` file), and every command on the user's repository
names both (`--git-dir`, `--work-tree`), so `core.worktree` decides nothing. `open_git` refuses
(GitLocationError) a repository whose own idea of its work tree is another directory —
`core.worktree = ../..` survives a tar or zip, and a `.git` file can point at someone else's
repository — and refuses to run git at all (GitConfigRefused) when the repository's config
includes other files (`include.path`, `includeIf.*.path`): git reads an included file on every
command, it may be a FIFO that never ends, and none of its keys can be read in advance without
following it. A command that needs no repository (`config --file`, `init`) runs with
`GIT_DIR=/dev/null` or its own `GIT_DIR`, so git never discovers one.

The user's own system and global config still apply (they are the user's: `core.excludesFile`,
`safe.directory`, an `includeIf` of their own); ctxagent commits nothing in the user's repository,
so no identity is needed from them, and the shadow repository sets its own.

Attribute-driven drivers have per-driver names, so they cannot be turned off by one fixed option
(and git 2.39 has no `--attr-source`): `driver_overrides(repo)` reads the driver names from the
config (reading config runs nothing) and returns the options that empty them. Diffs must also pass
`DIFF_SAFE_FLAGS` (an empty textconv would be an error, so `--no-textconv` is the way), which
`git_command` adds to every command that can show a diff.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ctxagent.context.errors import StateDirError

GIT = "git"
NO_REPO = "/dev/null"  # GIT_DIR for a command that must not find a repository by itself

# Highest precedence (`-c`), whatever `.git/config`, a shadow repository's config or an include says.
SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),  # an fsmonitor hook is a program run on every index refresh
    ("core.hooksPath", "/dev/null"),  # no hook at all (update-ref runs reference-transaction)
    ("core.pager", "cat"),
    ("core.sshCommand", "false"),  # never reached (no transport is allowed), and inert if it were
    ("core.askPass", "false"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("credential.helper", ""),  # an empty value clears every helper the config lists
    ("protocol.allow", "never"),  # ctxagent never talks to a remote (ext:: would run a program)
    ("diff.external", ""),
    ("commit.gpgSign", "false"),  # gpg.program would be run by commit-tree
    ("tag.gpgSign", "false"),
    ("log.showSignature", "false"),  # showing a signature runs gpg.program too
    ("gpg.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    ("gc.auto", "0"),  # no background gc / maintenance spawned by our commands
    ("maintenance.auto", "false"),
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"),  # a submodule's own config would run in a child git
    ("status.submoduleSummary", "false"),
)

# Add these to every diff / log / show: textconv and external diff drivers run programs.
DIFF_SAFE_FLAGS: tuple[str, ...] = ("--no-textconv", "--no-ext-diff")

# Variables that would make git operate on another repository than the one we chose (git's own
# `local_repo_env` list). The user's GIT_CONFIG_GLOBAL / _NOSYSTEM are kept: the user is trusted.
_REPO_ENV = frozenset({
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE", "GIT_COMMON_DIR", "GIT_NAMESPACE",
    "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS",
    "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_ATTR_SOURCE",
})

# Config keys (as `git config --name-only` spells them, lower case) that pull in other files.
_INCLUDE_KEYS = ("include.path",)
_INCLUDE_IF = ("includeif.",)


class GitLocationError(StateDirError):
    """The repository's own idea of where its work tree is differs from the root ctxagent chose."""


class GitConfigRefused(StateDirError):
    """ctxagent runs no git command in this repository (its config cannot be made inert)."""


class GitOwnershipRefused(GitConfigRefused):
    """git itself refuses the repository (`safe.directory`: it belongs to another user)."""


@dataclass(frozen=True)
class GitRepo:
    """A repository as ctxagent runs git on it: the work tree it chose and the database `.git` names."""

    work_tree: Path
    git_dir: Path
    inert: tuple[tuple[str, str], ...] = ()  # driver_overrides: every filter driver of its config emptied

    def options(self) -> list[str]:
        out = [f"--git-dir={self.git_dir}", f"--work-tree={self.work_tree}"]
        for key, value in self.inert:
            out += ["-c", f"{key}={value}"]
        return out


def safe_options(extra: Iterable[tuple[str, str]] = ()) -> list[str]:
    """`--no-pager -c k=v …` for SAFE_CONFIG followed by `extra` pairs (later pairs win)."""
    out = ["--no-pager"]
    for key, value in (*SAFE_CONFIG, *extra):
        out += ["-c", f"{key}={value}"]
    return out


def git_command(*args: str, config: Iterable[tuple[str, str]] = (), repo: GitRepo | None = None) -> list[str]:
    """The argv for `git <args>` with every program-running setting off, on `repo` when given.

    `config` adds (key, value) pairs of the caller's own (e.g. `("core.quotepath", "false")`, or
    what `driver_overrides` returned); they come after SAFE_CONFIG.
    """
    return [GIT, *(repo.options() if repo is not None else []), *safe_options(config), *_with_diff_flags(args)]


# Commands that may show a diff, and so run a textconv or an external diff driver named in
# `.gitattributes`: DIFF_SAFE_FLAGS goes in by construction, so no caller can forget it.
_DIFF_COMMANDS = frozenset({"diff", "log", "show", "diff-tree", "diff-index", "diff-files", "whatchanged", "format-patch"})


def _with_diff_flags(args: Sequence[str]) -> list[str]:
    out = list(args)
    at = next((i for i, a in enumerate(out) if not a.startswith("-")), None)
    if at is None or out[at] not in _DIFF_COMMANDS:
        return out
    return [*out[:at + 1], *(f for f in DIFF_SAFE_FLAGS if f not in out), *out[at + 1:]]


def git_env(overrides: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a git child: ours without repository-redirecting variables, no optional
    locks (a read-only view never rewrites the user's index), no terminal prompt, plus `overrides`."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if k not in _REPO_ENV and not k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    env.update(overrides or {})
    return env


def run_git(
    args: Sequence[str],
    *,
    repo: GitRepo | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    config: Iterable[tuple[str, str]] = (),
    stdin: bytes | None = None,
    timeout: float | None = 120,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git_command(*args)`; `env` adds to `git_env()`. Raises OSError / TimeoutExpired like subprocess.

    With `repo`, git works on that repository and work tree and nothing else. Without it git finds
    no repository by itself: `env` names one (`GIT_DIR`, the shadow repository) or there is none
    (`GIT_DIR=/dev/null`: `config --file`, `init` of a path).
    """
    extra = dict(env or {})
    if repo is None:
        extra.setdefault("GIT_DIR", NO_REPO)
    return subprocess.run(
        git_command(*args, config=config, repo=repo), cwd=cwd if cwd is not None else (repo.work_tree if repo else None),
        env=git_env(extra), input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True, timeout=timeout, check=False,
    )


# --- which repository ----------------------------------------------------------------------------


def _gitdir_from_file(dot_git: Path) -> Path:
    """Where a `.git` file points (`gitdir: <path>`, relative to the file's folder)."""
    try:
        with open(dot_git, "rb") as fh:  # a FIFO or a device is refused before: see _check_entry
            first = fh.read(4096).decode("utf-8", "surrogateescape").splitlines()
    except OSError as exc:
        raise GitConfigRefused(f"cannot read {dot_git}: {exc.strerror or exc}") from exc
    line = first[0] if first else ""
    if not line.startswith("gitdir:"):
        raise GitConfigRefused(f"{dot_git} is a file but not a git link (it does not start with 'gitdir:')")
    target = Path(line[len("gitdir:"):].strip())
    return Path(os.path.realpath(target if target.is_absolute() else dot_git.parent / target))


def _check_entry(path: Path, what: str, *, directory: bool) -> None:
    """`path` is absent, or the kind of file git expects there (a FIFO would block git forever)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise GitConfigRefused(f"cannot access {path}: {exc.strerror or exc}") from exc
    ok = stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)
    if not ok:
        raise GitConfigRefused(f"ctxagent runs no git command in this repository: {what} {path} is not a "
                               f"{'directory' if directory else 'regular file'}")


def _config_files(git_dir: Path) -> list[Path]:
    """The repository's own config files: its `config`, a linked work tree's common one, `config.worktree`."""
    files = [git_dir / "config", git_dir / "config.worktree"]
    common = git_dir / "commondir"
    if common.is_file():
        try:
            rel = common.read_text("utf-8", "surrogateescape").strip()
        except OSError:
            rel = ""
        if rel:
            base = Path(rel) if Path(rel).is_absolute() else git_dir / rel
            files += [base / "config", base / "config.worktree"]
    return files


def _includes(config_file: Path) -> list[str]:
    """The include keys of one config file, read without following them (and running nothing)."""
    if not config_file.exists():
        return []
    _check_entry(config_file, "the git config file", directory=False)
    try:
        out = run_git(["config", "--file", str(config_file), "--no-includes", "--name-only", "--list", "-z"], timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitConfigRefused(f"cannot read {config_file}: {exc}") from exc
    if out.returncode != 0:
        err = out.stderr.decode("utf-8", "replace").strip()
        raise GitConfigRefused(f"ctxagent runs no git command in this repository: {config_file} is not valid ({err[:200]})")
    keys = [k.decode("utf-8", "surrogateescape") for k in out.stdout.split(b"\0") if k]
    return [k for k in keys if k.lower() in _INCLUDE_KEYS or (k.lower().startswith(_INCLUDE_IF) and k.lower().endswith(".path"))]


def _points_back(root: Path, git_dir: Path) -> bool:
    """Whether a repository database outside `root` belongs to it: a linked work tree's `gitdir`
    file names `root/.git`, or a submodule's `core.worktree` is `root`."""
    back = git_dir / "gitdir"
    if back.is_file():
        try:
            text = back.read_text("utf-8", "surrogateescape").strip()
        except OSError:
            text = ""
        if text and os.path.realpath(text) == os.path.realpath(root / ".git"):
            return True
    try:
        out = run_git(["config", "--file", str(git_dir / "config"), "--no-includes", "--get", "core.worktree"], timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    value = out.stdout.decode("utf-8", "surrogateescape").strip()
    if out.returncode != 0 or not value:
        return False
    target = Path(value) if Path(value).is_absolute() else git_dir / value
    return os.path.realpath(target) == os.path.realpath(root)


_opened: dict[tuple[str, tuple[tuple[int, int, int], ...]], GitRepo | None] = {}


def _signature(root: Path, files: Iterable[Path]) -> tuple[tuple[int, int, int], ...]:
    out = []
    for f in (root / ".git", *files):
        try:
            st = os.stat(f)
            out.append((st.st_ino, st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((0, 0, 0))
    return tuple(out)


def open_git(root: Path) -> GitRepo | None:
    """The repository whose work tree is `root`, or None when `root` holds no `.git`.

    Raises GitLocationError when the repository says its work tree is elsewhere (`core.worktree`,
    a `.git` file pointing at another repository) and GitConfigRefused when its config cannot be
    made inert (includes, a config file that is not a regular file). No repository above `root`
    is ever looked for.
    """
    root = Path(os.path.realpath(root))
    dot_git = root / ".git"
    if not os.path.lexists(dot_git):
        return None
    if dot_git.is_symlink():
        raise GitConfigRefused(f"ctxagent runs no git command in {root}: its .git is a symbolic link")
    if dot_git.is_file():
        _check_entry(dot_git, "the .git file", directory=False)
        git_dir = _gitdir_from_file(dot_git)
        if not git_dir.is_dir():
            raise GitConfigRefused(f"{dot_git} points git at {git_dir}, which is not a directory")
    elif dot_git.is_dir():
        git_dir = dot_git
    else:
        raise GitConfigRefused(f"ctxagent runs no git command in {root}: its .git is not a file or a directory")
    files = _config_files(git_dir)
    key = (str(root), _signature(root, [git_dir, *files]))
    if key in _opened:
        return _opened[key]
    for name in ("HEAD", "index", "info/exclude", "info/attributes", "packed-refs"):
        _check_entry(git_dir / name, "the git file", directory=False)
    found = [k for f in files for k in _includes(f)]
    if found:
        raise GitConfigRefused(
            f"ctxagent runs no git command in {root}: its git config includes other files ({', '.join(sorted(set(found)))}), "
            "which every git command would read and obey, and which cannot be checked without following them. "
            "If the include is yours, copy its settings into .git/config and remove it "
            f"(git -C {root} config --unset-all include.path); git_status and git_diff stay off until then.")
    if not git_dir.is_relative_to(root) and not _points_back(root, git_dir):
        raise GitLocationError(
            f"refusing to work in {root}: its .git file points git at {git_dir}, a repository whose work tree is "
            f"not {root}. Work in that repository's own directory, or remove {dot_git}.")
    repo = GitRepo(root, git_dir)
    top = _git_toplevel(root)
    if top is not None and top != root:
        raise GitLocationError(
            f"refusing to work in {root}: its git repository ({git_dir}) says its work tree is {top} (core.worktree), "
            f"not the directory that holds .git. ctxagent's root is {root}; a repository that moves git's work "
            f"elsewhere is refused. If this is your set-up, unset it (git --git-dir={git_dir} config --unset core.worktree) "
            "or run ctxagent in that work tree.")
    repo = GitRepo(root, git_dir, tuple(driver_overrides(repo)))  # so no command on it can run a filter
    _opened[key] = repo
    return repo


def _git_toplevel(root: Path) -> Path | None:
    """The work tree git itself finds from `root` (None when it has none: bare, unreadable).

    The one command that lets git find the repository by itself, from `root` only (a ceiling at its
    parent): so git's own ownership check (`safe.directory`) applies, and a repository another
    user owns is refused here as git would refuse it.
    """
    env = git_env({"GIT_CEILING_DIRECTORIES": str(root.parent)})
    try:
        out = subprocess.run(git_command("rev-parse", "--show-toplevel"), cwd=root, env=env, stdin=subprocess.DEVNULL,
                             capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    err = out.stderr.decode("utf-8", "replace")
    if "dubious ownership" in err or "safe.directory" in err:
        raise GitOwnershipRefused(f"ctxagent runs no git command in {root}: git itself refuses it ({err.strip()[:400]})")
    top = out.stdout.decode("utf-8", "surrogateescape").strip()
    return Path(os.path.realpath(top)) if out.returncode == 0 and top else None


def repo_or_none(root: Path) -> GitRepo | None:
    """`open_git`, with a refused repository read as no repository (for views that have a fallback)."""
    try:
        return open_git(root)
    except StateDirError:
        return None


def driver_overrides(repo: GitRepo, env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """`-c` pairs that empty every filter driver configured for `repo`.

    An empty `clean`/`smudge`/`process` is "no filter" to git, and `required=false` keeps a missing
    filter from being an error. Diff drivers are handled by DIFF_SAFE_FLAGS instead.
    """
    try:
        proc = run_git(["config", "-z", "--name-only", "--get-regexp", r"^filter\."], repo=repo, env=env, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    names: set[str] = set()
    for key in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        head, _, _option = key.rpartition(".")
        if head.startswith("filter.") and len(head) > len("filter."):
            names.add(head[len("filter."):])
    pairs: list[tuple[str, str]] = []
    for name in sorted(names):
        pairs += [(f"filter.{name}.{opt}", "") for opt in ("clean", "smudge", "process")]
        pairs.append((f"filter.{name}.required", "false"))
    return pairs


def tracked_under(root: Path, rel: str) -> list[str]:
    """Paths git tracks under `rel` in the repository at `root` (empty outside a repository)."""
    repo = repo_or_none(root)
    if repo is None:
        return []
    try:
        out = run_git(["--literal-pathspecs", "ls-files", "-z", "--cached", "--", rel], repo=repo, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if out.returncode != 0:
        return []
    return [os.fsdecode(p) for p in out.stdout.split(b"\0") if p]
