"""A shadow git repository that snapshots the user's working tree without touching the user's git.

The shadow repository lives at `<state_dir>/shadow.git` and is always driven with
GIT_DIR=<shadow>, GIT_WORK_TREE=<repo root> and GIT_INDEX_FILE=<state_dir>/shadow.index, so the
user's index, HEAD, branches, stash, hooks and config are never read for writing nor written.
Only plumbing commands are used (add, write-tree, commit-tree, update-ref), every one built by
`context.gitsafe.git_command` (no hooks, no fsmonitor, no pager, no signing program) with the
shadow's own settings passed as `-c` options too, so the shadow's config file decides nothing.

The shadow repository is ctxagent's own: it is created here (`git init --template=`), and one that
is found with settings ctxagent never writes (e.g. `core.fsmonitor = "…"` in a `.ctxagent/` that
came with the repository) is refused with a CheckpointError instead of being used.

Which files a snapshot holds mirrors what the user's git would show: tracked and untracked files,
not ignored ones. `.gitignore` files in the tree and the global excludes file are honoured by the
shadow repository itself; the user's `.git/info/exclude` is copied into the shadow's own
`info/exclude` before every scan; files the user tracks although they match an ignore rule are
force-added, as the user's git keeps tracking them. The state folder (`.ctxagent/`) is excluded.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ctxagent.context.errors import CtxagentError, ToolError
from ctxagent.context.floor.beneath import read_small
from ctxagent.context.floor.gitsafe import repo_or_none, run_git
from ctxagent.context.floor.state_paths import ensure_parent

USER_GIT_TIMEOUT = 600  # seconds: a FIFO planted as a .gitignore would block git for ever


class CheckpointError(CtxagentError):
    """The shadow repository could not snapshot or restore the working tree."""


# Settings that keep snapshots byte-exact and git fast and quiet, whatever the global config says.
_SHADOW_CONFIG: dict[str, str] = {
    "core.bare": "false",
    "core.autocrlf": "false",
    "core.safecrlf": "false",
    "core.filemode": "true",
    "core.symlinks": "true",
    "core.fsmonitor": "false",
    "core.untrackedCache": "false",
    "core.quotepath": "false",
    "gc.auto": "0",  # our refs keep every snapshot; no background gc while the agent works
    "commit.gpgsign": "false",
    "advice.addEmbeddedRepo": "false",
    "user.name": "ctxagent",
    "user.email": "ctxagent@localhost",
}

# Keys `git init` writes itself; with _SHADOW_CONFIG (those values only), all a shadow made by ctxagent sets.
_INIT_KEYS = frozenset({
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates", "core.ignorecase",
    "core.precomposeunicode", "core.symlinks", "extensions.objectformat",
})

# info/attributes has the highest precedence: no eol conversion and no clean/smudge filter (e.g.
# git-lfs) may turn the stored bytes into anything but the bytes on disk.
# `!diff` leaves binary detection to git but no diff driver (textconv) of the repository applies.
_SHADOW_ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding !diff !merge\n"
_MAX_EXCLUDE_BYTES = 1_000_000


@dataclass(frozen=True)
class TreeEntry:
    mode: str  # "100644", "100755", "120000" (symlink) or "160000" (nested repository)
    sha: str

    @property
    def is_gitlink(self) -> bool:
        return self.mode == "160000"

    @property
    def is_symlink(self) -> bool:
        return self.mode == "120000"


@dataclass(frozen=True)
class RefInfo:
    name: str
    commit: str
    message: str


def _split_z(raw: bytes) -> list[str]:
    return [os.fsdecode(part) for part in raw.split(b"\0") if part]


class ShadowRepo:
    """Low-level access to the shadow repository; `Checkpoints` builds the turn logic on top."""

    def __init__(self, repo_root: Path, state_dir: Path):
        self.repo_root = Path(repo_root).resolve()
        self.state_dir = Path(state_dir).resolve()
        self.git_dir = self.state_dir / "shadow.git"
        self.index_file = self.state_dir / "shadow.index"
        self._ready = False
        self._user_git_dir: Path | None = None
        self._user_git_checked = False

    # -- setup -------------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        return {
            "GIT_DIR": str(self.git_dir),
            "GIT_WORK_TREE": str(self.repo_root),
            "GIT_INDEX_FILE": str(self.index_file),
            "GIT_OBJECT_DIRECTORY": str(self.git_dir / "objects"),
            "GIT_COMMON_DIR": str(self.git_dir),
            "GIT_AUTHOR_NAME": "ctxagent",
            "GIT_AUTHOR_EMAIL": "ctxagent@localhost",
            "GIT_COMMITTER_NAME": "ctxagent",
            "GIT_COMMITTER_EMAIL": "ctxagent@localhost",
        }

    def ensure(self) -> None:
        """Create the shadow repository on first use, or check that an existing one is ctxagent's."""
        if self._ready:
            return
        try:
            ensure_parent(self.git_dir)
        except (OSError, CtxagentError) as exc:
            raise CheckpointError(f"cannot create the shadow repository at {self.git_dir}: {exc}") from exc
        if os.path.lexists(self.git_dir):
            self._check_own()
        else:
            self._create()
        info = self.git_dir / "info"
        try:  # rewritten on every open: the attributes are what keeps snapshots byte-exact and filter-free
            info.mkdir(exist_ok=True)
            if not (info / "attributes").exists() or (info / "attributes").read_text(encoding="utf-8") != _SHADOW_ATTRIBUTES:
                (info / "attributes").write_text(_SHADOW_ATTRIBUTES, encoding="utf-8")
        except OSError as exc:
            raise CheckpointError(f"cannot write {info / 'attributes'}: {exc}") from exc
        self._ready = True

    def _create(self) -> None:
        try:
            out = run_git(["init", "--bare", "--quiet", "--template="], cwd=self.state_dir,
                          env={"GIT_DIR": str(self.git_dir)}, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CheckpointError(f"cannot create the shadow repository at {self.git_dir}: {exc}") from exc
        if out.returncode != 0:
            err = out.stderr.decode("utf-8", "replace").strip()
            raise CheckpointError(f"cannot create the shadow repository at {self.git_dir}: {err[:300]}")
        lines = []
        for key, value in _SHADOW_CONFIG.items():
            section, option = key.rsplit(".", 1)
            lines.append(f"[{section}]\n\t{option} = {value}\n")
        try:
            with open(self.git_dir / "config", "a", encoding="utf-8") as fh:
                fh.write("".join(lines))
        except OSError as exc:
            raise CheckpointError(f"cannot configure the shadow repository at {self.git_dir}: {exc}") from exc

    def _check_own(self) -> None:
        """Refuse a shadow repository whose config holds anything ctxagent does not write."""
        fix = f"delete it (rm -rf {self.git_dir}) and ctxagent creates its own at the next checkpoint"
        if os.path.islink(self.git_dir) or not self.git_dir.is_dir():
            raise CheckpointError(f"{self.git_dir} is not a directory ctxagent created; checkpoints are off: {fix}")
        try:
            out = run_git(["config", "--file", str(self.git_dir / "config"), "--list", "-z"], cwd=self.state_dir, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CheckpointError(f"cannot read {self.git_dir / 'config'}: {exc}") from exc
        if out.returncode != 0:
            raise CheckpointError(f"{self.git_dir / 'config'} is unreadable; checkpoints are off: {fix}")
        ours = {k.lower(): v for k, v in _SHADOW_CONFIG.items()}
        foreign: list[str] = []
        for entry in out.stdout.decode("utf-8", "replace").split("\0"):
            key, _, value = entry.partition("\n")
            key = key.lower()
            if key and (key not in _INIT_KEYS and ours.get(key) != value):
                foreign.append(key)
        if foreign:
            raise CheckpointError(
                f"{self.git_dir} was not created by ctxagent (its config sets {', '.join(sorted(set(foreign))[:5])}); "
                f"it is not used and checkpoints are off: {fix}"
            )

    def run(self, *args: str, stdin: bytes | None = None, check: bool = True, partial_ok: bool = False) -> bytes:
        """Run git against the shadow repository; returns raw stdout (paths are NUL-separated with -z).

        `partial_ok`: a non-zero exit is fine unless git said "fatal" (e.g. `add --ignore-errors`
        skipping an unreadable file still stages everything else).
        """
        self.ensure()
        try:
            out = run_git(list(args), cwd=self.repo_root, env=self._env(), config=_SHADOW_CONFIG.items(),
                          stdin=stdin, timeout=None)
        except (OSError, subprocess.SubprocessError) as exc:
            raise CheckpointError(f"shadow git {args[0]} could not run: {exc}") from exc
        err_text = out.stderr.decode("utf-8", "replace")
        if out.returncode != 0 and check and not (partial_ok and "fatal:" not in err_text):
            raise CheckpointError(f"shadow git {' '.join(args[:2])} failed: {err_text.strip()[:500]}")
        return out.stdout

    # -- the user's own git (read-only) ---------------------------------------------------------

    def _user_git(self, *args: str) -> bytes | None:
        """Run a read-only command in the user's repository, or None when it is not one (or one
        `open_git` refuses). Named by `--git-dir` / `--work-tree`; no optional lock is taken."""
        repo = repo_or_none(self.repo_root)
        if repo is None:
            return None
        try:
            out = run_git(list(args), repo=repo, timeout=USER_GIT_TIMEOUT)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout if out.returncode == 0 else None

    def user_git_dir(self) -> Path | None:
        """The user's .git directory (the common one, for a linked work tree) when repo_root is its work tree."""
        if not self._user_git_checked:
            self._user_git_checked = True
            out = self._user_git("rev-parse", "--git-common-dir")
            if out:
                common = Path(out.decode("utf-8", "surrogateescape").strip())
                self._user_git_dir = (common if common.is_absolute() else self.repo_root / common).resolve()
        return self._user_git_dir

    def _user_tracked_but_ignored(self) -> list[str]:
        if self.user_git_dir() is None:
            return []
        out = self._user_git("ls-files", "-z", "--cached", "--ignored", "--exclude-standard")
        return _split_z(out or b"")

    def _state_rel(self) -> str | None:
        try:
            rel = self.state_dir.relative_to(self.repo_root)
        except ValueError:
            return None
        return rel.as_posix() if rel.parts else None

    def _sync_excludes(self) -> None:
        lines = ["# written by ctxagent before every snapshot: the user's info/exclude plus our state folder"]
        user_dir = self.user_git_dir()
        if user_dir is not None:
            try:  # the repository's own file: a FIFO or a link out in its place is skipped, never followed
                lines.append(read_small(user_dir, "info/exclude", _MAX_EXCLUDE_BYTES).decode("utf-8", "surrogateescape"))
            except (OSError, ToolError):
                pass
        rel = self._state_rel()
        if rel:
            lines.append(f"/{rel}/")
        text = "\n".join(lines) + "\n"
        target = self.git_dir / "info" / "exclude"
        try:
            if target.read_text(encoding="utf-8", errors="surrogateescape") == text:
                return
        except OSError:
            pass
        target.parent.mkdir(exist_ok=True)
        target.write_text(text, encoding="utf-8", errors="surrogateescape")

    # -- snapshots -----------------------------------------------------------------------------

    def scan(self) -> str:
        """Stage the working tree (tracked + untracked, not ignored) in the shadow index; return its tree sha."""
        self.ensure()
        self._sync_excludes()
        pathspec = ["--", "."]
        rel = self._state_rel()
        if rel:
            pathspec.append(f":(exclude){rel}")
        # Callers hold the Checkpoints lock, so an index lock left behind is from a crashed run.
        stale_lock = Path(f"{self.index_file}.lock")
        if stale_lock.exists():
            stale_lock.unlink()
        self.run("add", "--all", "--ignore-errors", *pathspec, partial_ok=True)
        forced = set(self._user_tracked_but_ignored())
        # Entries that became ignored since the last scan leave the shadow index (they stay in old snapshots).
        stale = [p for p in _split_z(self.run("ls-files", "-z", "--cached", "--ignored", "--exclude-standard")) if p not in forced]
        if rel:
            stale += [p for p in _split_z(self.run("ls-files", "-z", "--cached", "--", rel))]
        if stale:
            self.run("--literal-pathspecs", "rm", "--cached", "-q", "--ignore-unmatch", "--pathspec-from-file=-",
                     "--pathspec-file-nul", stdin=b"\0".join(os.fsencode(p) for p in stale))
        present = [p for p in forced if os.path.lexists(self.repo_root / p)]
        if present:
            self.run("--literal-pathspecs", "add", "-f", "--ignore-errors", "--pathspec-from-file=-",
                     "--pathspec-file-nul", stdin=b"\0".join(os.fsencode(p) for p in present), partial_ok=True)
        return self.run("write-tree").decode().strip()

    def commit(self, tree: str, message: str, parent: str | None = None) -> str:
        args = ["commit-tree", tree, "-m", message]
        if parent:
            args += ["-p", parent]
        return self.run(*args).decode().strip()

    def update_ref(self, name: str, commit: str) -> None:
        self.run("update-ref", "-m", "ctxagent checkpoint", name, commit)

    def resolve(self, rev: str) -> str | None:
        out = self.run("rev-parse", "--verify", "--quiet", rev + "^{commit}", check=False).decode().strip()
        return out or None

    def refs(self, prefix: str) -> list[RefInfo]:
        fmt = "%(refname)%00%(objectname)%00%(contents)%00%00"
        raw = self.run("for-each-ref", f"--format={fmt}", prefix)
        result: list[RefInfo] = []
        for record in raw.split(b"\0\0\n"):
            parts = record.split(b"\0", 2)
            if len(parts) == 3:
                result.append(RefInfo(parts[0].decode(), parts[1].decode(), parts[2].decode("utf-8", "replace")))
        return result

    def message(self, commit: str) -> str:
        return self.run("cat-file", "commit", commit).decode("utf-8", "replace").split("\n\n", 1)[-1]

    def tree_entries(self, treeish: str) -> dict[str, TreeEntry]:
        raw = self.run("ls-tree", "-r", "-z", "--full-tree", treeish)
        entries: dict[str, TreeEntry] = {}
        for record in raw.split(b"\0"):
            if not record:
                continue
            meta, _, path = record.partition(b"\t")
            mode, _kind, sha = meta.decode().split(" ")
            entries[os.fsdecode(path)] = TreeEntry(mode, sha)
        return entries

    def numstat(self, old: str, new: str) -> dict[str, tuple[int | None, int | None]]:
        """Lines added / deleted per path between two tree-ishes (None, None for binary files)."""
        raw = self.run("diff-tree", "-r", "-z", "--numstat", "--no-renames", old, new)
        stats: dict[str, tuple[int | None, int | None]] = {}
        for record in raw.split(b"\0"):
            fields = record.split(b"\t", 2)
            if len(fields) != 3:
                continue
            added, deleted, path = fields
            stats[os.fsdecode(path)] = (
                int(added) if added.isdigit() else None,
                int(deleted) if deleted.isdigit() else None,
            )
        return stats

    def blob(self, sha: str) -> bytes:
        try:
            return self.run("cat-file", "blob", sha)
        except CheckpointError as exc:
            raise CheckpointError(f"cannot read blob {sha} from the shadow repository: {exc}") from exc

    def close(self) -> None:
        """Nothing stays open between commands (kept for callers that close what they open)."""
