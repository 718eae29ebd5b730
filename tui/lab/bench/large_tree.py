"""`ctxagent bench tree`: the file tools on a large repository (issue 19: a 200k-file tree made a
not-found read_file take 10 s, list_files 11 s, grep 8 s).

Builds a tree of N small files (default 200,000, 100 per folder, two levels deep) in a temporary
folder, once as a git repository (every file committed, plus untracked ones) and once as a plain
folder (the walk), and times, as the model would call them: a read of a file that does not exist
(with and without folders on the way), list_files over everything, list_files with a glob, grep
for a rare word, and grep for a word on every line (which must stop at its cap). Median of
`--repeat` runs each; seconds.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from ctxagent.context.floor.display import echo, echo_json
from ctxagent.context.floor.gitsafe import git_env
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext

CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("read_file (not found)", "read_file", {"path": "missing_module.py"}),
    ("read_file (not found, deep)", "read_file", {"path": "d0007/s0003/missing.py"}),
    ("list_files", "list_files", {}),
    ("list_files glob", "list_files", {"glob": "**/f0042.py"}),
    ("grep rare", "grep", {"pattern": "NEEDLE_[0-9]+"}),
    ("grep everywhere", "grep", {"pattern": "value"}),
]


def build_tree(root: Path, files: int, per_dir: int = 100, *, git: bool) -> Path:
    """`files` files under `root` in folders of `per_dir`, two levels (`dNNNN/sNNNN/fNNNN.py`)."""
    root.mkdir(parents=True, exist_ok=True)
    folders = max(1, files // per_dir)
    per_top = max(1, int(folders ** 0.5))
    made = 0
    for k in range(folders):
        folder = root / f"d{k // per_top:04d}" / f"s{k % per_top:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(min(per_dir, files - made)):
            body = f"value = {made}\n" + (f"# NEEDLE_{made}\n" if made % 50_000 == 7 else "")
            (folder / f"f{i:04d}.py").write_text(body, encoding="utf-8")
            made += 1
    (root / "node_modules" / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "node_modules" / "pkg" / "index.js").write_text("value\n", encoding="utf-8")
    if git:
        env = git_env({"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@e.invalid", "GIT_COMMITTER_NAME": "bench",
                       "GIT_COMMITTER_EMAIL": "b@e.invalid"})
        (root / ".gitignore").write_text("node_modules/\n", encoding="utf-8")
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tree"]):
            subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
        (root / "untracked.py").write_text("value = -1\n", encoding="utf-8")
    return root


def time_calls(root: Path, repeat: int = 3) -> dict[str, float]:
    reg = make_registry()
    out: dict[str, float] = {}
    for label, name, args in CALLS:
        times = []
        for _ in range(repeat):
            ctx = ToolContext(root=root, config={"grep_engine": "auto"})
            started = time.perf_counter()
            reg.run(name, args, ctx)
            times.append(time.perf_counter() - started)
        out[label] = round(statistics.median(times), 3)
    return out


def run_tree(files: int = 200_000, repeat: int = 3, keep: Path | None = None) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="ctxagent-tree-")) if keep is None else keep
    try:
        result: dict[str, Any] = {"files": files, "repeat": repeat, "seconds": {}}
        for kind, git in (("git", True), ("plain", False)):
            root = base / kind
            if not root.exists():
                build_tree(root, files, git=git)
            result["seconds"][kind] = time_calls(root, repeat)
        return result
    finally:
        if keep is None:
            shutil.rmtree(base, ignore_errors=True)


def tree_text(result: dict[str, Any]) -> str:
    kinds = list(result["seconds"])
    lines = [f"file tools on a {result['files']:,}-file tree (median of {result['repeat']}, seconds)",
             f"{'call':<30}" + "".join(f"{k:>10}" for k in kinds)]
    for label, _name, _args in CALLS:
        lines.append(f"{label:<30}" + "".join(f"{result['seconds'][k][label]:>10.3f}" for k in kinds))
    return "\n".join(lines)


def _run(args: Any) -> int:
    keep = Path(args.keep) if args.keep else None
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    result = run_tree(args.files, args.repeat, keep)
    if args.json:
        echo_json(result, indent=2)
    else:
        echo(tree_text(result))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


def add_parser(bench_subparsers: Any) -> None:
    p = bench_subparsers.add_parser("tree", help="read_file / list_files / grep on a 200k-file repository (git and plain)")
    p.add_argument("--files", type=int, default=200_000, help="files in each tree (default 200000)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per call (the median is shown)")
    p.add_argument("--keep", help="build the trees in this folder and keep them (reused when present)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--out", help="also write the JSON result to this file")
    p.set_defaults(func=_run)

