"""git_status and git_diff, through gitpython.

Both are read-only views: git runs with `safe_git_env` (tools/safe_git.py), so a hostile
repository's config cannot run a program (filters, textconv, external diff drivers, fsmonitor,
hooks) and the index is never rewritten; non-ASCII file names print as they are. Output is capped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import git
from ctxagent.context.errors import ToolError
from ctxagent.tools.base import FunctionTool, NoArgs, ToolArgs, ToolContext, ToolResult
from ctxagent.tools.paths import cap_text, repo_root, resolve_in_repo
from ctxagent.tools.safe_git import safe_git_env
from pydantic import Field

MAX_CHARS = 30_000
MAX_STATUS_ENTRIES = 300


def open_repo(root: Path) -> git.Repo:
    top = repo_root(root)
    try:
        return git.Repo(top, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise ToolError(f"not a git repository: {top} (git_status and git_diff need one; "
                        "list_files and read_file work without git)") from None


def _git(repo: git.Repo, *args: str) -> str:
    top = Path(repo.working_tree_dir or repo.git_dir)
    try:
        return str(repo.git.execute(["git", "--literal-pathspecs", *args], strip_newline_in_stdout=False,
                                    env=safe_git_env(top)))
    except git.GitCommandError as exc:
        err = (exc.stderr or "").strip().removeprefix("stderr:").strip(" '\n")
        raise ToolError(f"git {args[0]} failed: {err or exc}") from None


def _pathspec(repo: git.Repo, ctx: ToolContext, path: str | None) -> list[str]:
    if not path:
        return []
    resolved = resolve_in_repo(ctx.root, path)
    work = Path(repo.working_tree_dir or repo_root(ctx.root)).resolve()
    rel = resolved.relative_to(work).as_posix() if resolved.is_relative_to(work) else str(resolved)
    return ["--", rel or "."]


def git_status(args: NoArgs, ctx: ToolContext) -> ToolResult:
    repo = open_repo(ctx.root)
    out = _git(repo, "status", "--porcelain=v1", "-b", "--untracked-files=all", "--ignore-submodules=dirty")
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
    opts = ["--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty"]
    if repo.head.is_valid():
        diff = _git(repo, "diff", "HEAD", *opts, *spec)
        names = _git(repo, "diff", "HEAD", "--name-only", *opts, *spec)
    else:  # no commit yet: what is staged, then what is not
        diff = _git(repo, "diff", "--cached", *opts, *spec) + _git(repo, "diff", *opts, *spec)
        names = _git(repo, "diff", "--cached", "--name-only", *opts, *spec) + _git(repo, "diff", "--name-only", *opts, *spec)
    files = list(dict.fromkeys(n for n in names.split("\n") if n))
    untracked = [n for n in _git(repo, "ls-files", "--others", "--exclude-standard", *spec).split("\n") if n]
    where = f" in {args.path}" if args.path else ""
    parts = []
    if diff.strip():
        parts.append(cap_text(diff, MAX_CHARS, "pass path= to see one file's diff")[0].rstrip("\n"))
    if untracked:
        shown = ", ".join(untracked[:50]) + (f", ... ({len(untracked) - 50} more)" if len(untracked) > 50 else "")
        parts.append(f"untracked files (new, not in the diff; read_file them): {shown}")
    if not parts:
        return ToolResult(f"no changes{where} against {'HEAD' if repo.head.is_valid() else 'the empty tree'}",
                          meta={"files": []})
    return ToolResult("\n".join(parts), meta={"files": files, "untracked": untracked})


def git_tools() -> list[FunctionTool[Any]]:
    return [
        FunctionTool("git_status", "Show the git branch and changed, staged and untracked files.", NoArgs, "read", git_status),
        FunctionTool("git_diff", ("Show the uncommitted changes (staged and unstaged, against HEAD) as a unified diff, "
                                  "optionally for one path; untracked files are listed."),
                     GitDiffArgs, "read", git_diff),
    ]
