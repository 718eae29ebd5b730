"""git_status and git_diff: read-only views of the user's repository.

git runs through `context/floor/gitsafe.py` (the one place that builds git commands) on the
repository `open_git` names — `--git-dir` and `--work-tree` given, so `core.worktree` moves nothing
—: no fsmonitor, no hooks, no pager, the repository's filter drivers emptied, textconv and external
diff drivers off for diffs, and no optional locks, so a hostile `.git/config` cannot run a program
and the index is never rewritten. A repository `open_git` refuses gets that refusal as the error. Non-ASCII file names print as they are (`core.quotepath=false`). Output is capped.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from ctxagent.context.errors import StateDirError, ToolError
from ctxagent.context.floor.gitsafe import DIFF_SAFE_FLAGS, GitRepo, open_git, run_git
from ctxagent.tools.confine import cap_text, repo_root, resolve_in_repo
from ctxagent.tools.contract import FunctionTool, NoArgs, ToolArgs, ToolContext, ToolResult
from pydantic import Field

MAX_CHARS = 30_000
MAX_STATUS_ENTRIES = 300
_VIEW_CONFIG = (("core.quotepath", "false"), ("color.ui", "false"))


class Repo:
    """The work tree a read-only view runs in, with the options that keep its config inert."""

    def __init__(self, root: Path):
        try:
            repo = open_git(repo_root(root))
        except StateDirError as exc:
            raise ToolError(str(exc)) from None
        if repo is None:
            raise ToolError(f"not a git repository: {repo_root(root)} (git_status and git_diff need one; "
                            "list_files and read_file work without git)")
        self.repo: GitRepo = repo
        self.top = repo.work_tree
        self.config = list(_VIEW_CONFIG)  # the filter drivers are emptied by the GitRepo itself (repo.inert)

    def git(self, *args: str) -> str:
        try:
            proc = run_git(["--literal-pathspecs", *args], repo=self.repo, config=self.config, timeout=120)
        except OSError as exc:
            raise ToolError(f"could not run git: {exc}") from None
        except subprocess.TimeoutExpired:
            raise ToolError(f"git {args[0]} did not finish in 120 s") from None
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip()
            raise ToolError(f"git {args[0]} failed: {err or f'exit code {proc.returncode}'}")
        return proc.stdout.decode("utf-8", "surrogateescape")  # a name's bytes show as \xNN (tools/safe_text.py)

    def has_commits(self) -> bool:
        try:
            return run_git(["rev-parse", "--verify", "-q", "HEAD"], repo=self.repo, config=self.config, timeout=30).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False


def open_repo(root: Path) -> Repo:
    return Repo(root)


def _pathspec(repo: Repo, ctx: ToolContext, path: str | None) -> list[str]:
    if not path:
        return []
    resolved = resolve_in_repo(ctx.root, path)
    rel = resolved.relative_to(repo.top).as_posix() if resolved.is_relative_to(repo.top) else str(resolved)
    return ["--", rel or "."]


def git_status(args: NoArgs, ctx: ToolContext) -> ToolResult:
    repo = open_repo(ctx.root)
    out = repo.git("status", "--porcelain=v1", "-b", "--untracked-files=all", "--ignore-submodules=dirty")
    lines = [ln for ln in out.split("\n") if ln]
    branch = lines[0][3:] if lines and lines[0].startswith("## ") else "(unknown)"
    entries = [ln for ln in lines if not ln.startswith("## ")]
    files = [e[3:].split(" -> ")[-1] for e in entries]
    head = f"branch: {branch}"
    if not entries:
        return ToolResult(f"{head}\nnothing to commit, working tree clean", meta={"branch": branch, "files": []})
    counts = {"staged": sum(e[0] not in " ?" for e in entries), "unstaged": sum(e[1] not in " ?" for e in entries),
              "untracked": sum(e.startswith("??") for e in entries)}
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    body = "\n".join(entries[:MAX_STATUS_ENTRIES])
    if len(entries) > MAX_STATUS_ENTRIES:
        body += f"\n[... {len(entries) - MAX_STATUS_ENTRIES:,} more entries not shown; use git_diff with path= to look closer]"
    legend = "(XY: X = staged, Y = work tree; M modified, A added, D deleted, R renamed, ?? untracked)"
    text = f"{head}\n{len(entries)} changed ({summary}) {legend}\n{body}"
    return ToolResult(cap_text(text, MAX_CHARS, "use git_diff with path=")[0], meta={"branch": branch, "files": files})


class GitDiffArgs(ToolArgs):
    path: str | None = Field(None, description="file or directory to limit the diff to")


def git_diff(args: GitDiffArgs, ctx: ToolContext) -> ToolResult:
    repo = open_repo(ctx.root)
    spec = _pathspec(repo, ctx, args.path)
    opts = ["--no-color", *DIFF_SAFE_FLAGS, "--ignore-submodules=dirty"]
    has_commits = repo.has_commits()
    if has_commits:
        diff = repo.git("diff", "HEAD", *opts, *spec)
        names = repo.git("diff", "HEAD", "--name-only", *opts, *spec)
    else:  # no commit yet: what is staged, then what is not
        diff = repo.git("diff", "--cached", *opts, *spec) + repo.git("diff", *opts, *spec)
        names = repo.git("diff", "--cached", "--name-only", *opts, *spec) + repo.git("diff", "--name-only", *opts, *spec)
    files = list(dict.fromkeys(n for n in names.split("\n") if n))
    untracked = [n for n in repo.git("ls-files", "--others", "--exclude-standard", *spec).split("\n") if n]
    where = f" in {args.path}" if args.path else ""
    parts = []
    if diff.strip():
        parts.append(cap_text(diff, MAX_CHARS, "pass path= to see one file's diff")[0].rstrip("\n"))
    if untracked:
        shown = ", ".join(untracked[:50]) + (f", ... ({len(untracked) - 50} more)" if len(untracked) > 50 else "")
        parts.append(f"untracked files (new, not in the diff; read_file them): {shown}")
    if not parts:
        return ToolResult(f"no changes{where} against {'HEAD' if has_commits else 'the empty tree'}",
                          meta={"files": []})
    return ToolResult("\n".join(parts), meta={"files": files, "untracked": untracked})


def git_tools() -> list[FunctionTool[Any]]:
    return [
        FunctionTool("git_status", "Show the git branch and changed, staged and untracked files.", NoArgs, "read", git_status),
        FunctionTool("git_diff", ("Show the uncommitted changes (staged and unstaged, against HEAD) as a unified diff, "
                                  "optionally for one path; untracked files are listed."),
                     GitDiffArgs, "read", git_diff),
    ]
