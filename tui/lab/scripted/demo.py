"""`ctxagent demo`: the whole app without an API key, against the loopback scripted model server.

It makes a throwaway git repository (a bug in calc.py, a failing test, a large server log), starts
the scripted server with the script that ships in the package (agent/data/demo_script.json: read,
test, edit, test, read the big log — spilled — grep it, summarize), and opens the app on a small
window so usage crosses 75 % and the breakpoint prompt appears. Everything is labelled
"scripted demo"; nothing leaves 127.0.0.1.

It leaves nothing behind: the repository's folder (`ctxagent-demo-*`) goes when it stops, with the
repository's trust entry, its state folder's record and the demo model's calibration file. Each folder
names the process that owns it (`OWNER_FILE`); a demo that was killed cannot clean up, so every demo
starts by removing the folders whose owner is gone (`remove_stale_demos`). --keep keeps the folder and
drops its owner, so no later demo takes it for stale.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ctxagent.agent.trust import revoke, trust_repo
from ctxagent.context.floor.display import echo
from ctxagent.context.floor.gitsafe import git_command, git_env
from ctxagent.context.floor.state_paths import ensure_state_dir, forget_state_dir

DEMO_LABEL = "scripted demo"
DEMO_MODEL = "anthropic:scripted-demo"
DEMO_WINDOW = 6500  # (room for the budget tools' schemas) small on purpose: the big log and its grep push usage past 75 %
DEMO_PREFIX = "ctxagent-demo-"  # the throwaway folder's name (tempfile.mkdtemp's prefix)
OWNER_FILE = "owner.pid"  # in that folder: the pid of the demo that made it
DEMO_PROMPT = "The add test fails — fix calc.py, run the tests, then check logs/server.log for errors."

CALC = '''"""A tiny calculator (the demo's bug lives here)."""


def add(a, b):
    return a - b


def mul(a, b):
    return a * b
'''

TEST_CALC = '''import unittest

from calc import add, mul


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_mul(self):
        self.assertEqual(mul(2, 3), 6)


if __name__ == "__main__":
    unittest.main()
'''

README = """# demo

A throwaway repository made by `ctxagent demo`. Delete it whenever you like.
"""


def server_log(lines: int = 2400) -> str:
    """A large, realistic-looking log: mostly INFO, a recurring ERROR, some 中文 (to show both work)."""
    out = []
    for i in range(lines):
        ts = f"2025-01-01T10:{(i // 60) % 60:02d}:{i % 60:02d}Z"
        if i % 97 == 13:
            out.append(f"{ts} ERROR billing job retry {i // 97}: upstream timeout after 30s (will retry)")
        elif i % 50 == 7:
            out.append(f"{ts} WARN  cache miss ratio 0.{i % 90:02d} for key user:{i}")
        elif i % 211 == 5:
            out.append(f"{ts} INFO  用户登录成功 user={i} 会话已创建")
        else:
            out.append(f"{ts} INFO  GET /api/items/{i % 300} 200 {3 + i % 40}ms")
    return "\n".join(out) + "\n"


def _git(repo: Path, *args: str) -> None:
    who = [("user.name", "ctxagent demo"), ("user.email", "demo@ctxagent.invalid")]
    subprocess.run(git_command(*args, config=who), cwd=repo, env=git_env(), check=True, capture_output=True)


def create_demo_repo(parent: Path | None = None) -> Path:
    """A fresh git repository with the demo's files, committed; returns its path."""
    base = Path(tempfile.mkdtemp(prefix=DEMO_PREFIX, dir=str(parent) if parent else None))
    (base / OWNER_FILE).write_text(f"{os.getpid()}\n", encoding="ascii")
    repo = base / "demo-repo"
    (repo / "logs").mkdir(parents=True)
    (repo / "calc.py").write_text(CALC, encoding="utf-8")
    (repo / "test_calc.py").write_text(TEST_CALC, encoding="utf-8")
    (repo / "README.md").write_text(README, encoding="utf-8")
    (repo / "logs" / "server.log").write_text(server_log(), encoding="utf-8")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "demo: a calculator with a bug")
    # The repo's own config: the test command works without pytest installed, and the window is small.
    state = ensure_state_dir(repo)
    runner = "pytest -q" if importlib.util.find_spec("pytest") else "unittest -v"  # both summaries are parsed (tools/test_output.py)
    test_cmd = f"{shlex.quote(sys.executable)} -m {runner}"
    (state / "config.toml").write_text(f"test_command = {json.dumps(test_cmd)}\n", encoding="utf-8")
    trust_repo(repo)  # ctxagent wrote this config itself: its test_command applies (see agent/trust.py)
    return repo


def demo_script() -> list[dict[str, Any]]:
    text = resources.files("ctxagent.agent").joinpath("data/demo_script.json").read_text(encoding="utf-8")
    data = json.loads(text)
    assert isinstance(data, list)
    return data


@dataclass
class Demo:
    repo: Path
    server: Any  # ScriptedServer, running in a background thread
    flags: dict[str, Any] = field(default_factory=dict)
    keep: bool = False  # leave the repository (and its trust entry) for the user to look at
    label: str = DEMO_LABEL  # what the app calls the session
    prompt: str = DEMO_PROMPT  # typed into its input box, for the user to send

    def stop_server(self) -> None:
        """Stop the scripted model server (the app, when it closes; `stop` then removes the rest)."""
        self.server.stop()

    def stop(self) -> None:
        """Stop the server and, unless kept, remove what the demo made: the throwaway repository (its
        folder from `create_demo_repo`), its trust entry and the record of its state folder."""
        self.server.stop()
        if self.keep:
            (self.repo.parent / OWNER_FILE).unlink(missing_ok=True)  # the user's now: never stale
        else:
            remove_demo_repo(self.repo)


def remove_demo_repo(repo: Path) -> None:
    """Undo `create_demo_repo`: the trust entry, the state folder's record, then the folder itself
    (only a folder made by it: `ctxagent-demo-*` holding `demo-repo`), and the demo model's calibration."""
    from ctxagent.agent.factory import calibration_path

    base = repo.parent
    if repo.name != "demo-repo" or not base.name.startswith(DEMO_PREFIX):
        return  # not one of ours: never delete it
    try:
        revoke(repo)
        forget_state_dir(repo)
    except Exception as exc:  # a trust list we cannot write: the folder goes anyway, and we say so
        echo(f"ctxagent demo: could not drop the demo's trust entry: {exc}", err=True)
    shutil.rmtree(base, ignore_errors=True)
    try:
        calibration_path(DEMO_MODEL).unlink(missing_ok=True)  # learnt from the scripted model: no one else's
    except OSError as exc:
        echo(f"ctxagent demo: could not remove the demo's calibration file: {exc}", err=True)


def remove_stale_demos(parent: Path | None = None) -> list[Path]:
    """Remove the demo folders in `parent` (the temporary folder by default) whose owning process is
    gone — a demo that was killed. Only this user's folders that name an owner: one without (an older
    ctxagent, or kept with --keep) is left alone. Returns the folders removed."""
    from ctxagent.tools.atomic_write import pid_alive

    removed = []
    for base in sorted(Path(parent or tempfile.gettempdir()).glob(f"{DEMO_PREFIX}*")):
        try:
            if base.is_symlink() or not base.is_dir() or (hasattr(os, "getuid") and base.stat().st_uid != os.getuid()):
                continue
            pid = int((base / OWNER_FILE).read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            continue
        if pid > 0 and not pid_alive(pid):
            remove_demo_repo(base / "demo-repo")
            removed.append(base)
    return removed


def prepare_demo(parent: Path | None = None, window: int = DEMO_WINDOW, *, keep: bool = False) -> Demo:
    """The repository, the running server, and the config flags that point the app at it."""
    from ctxagent.tui.lab.scripted.server import ScriptedServer

    remove_stale_demos(parent)  # what killed demos left
    repo = create_demo_repo(parent)
    server = ScriptedServer(demo_script())
    base_url = server.start()
    flags = {"model": DEMO_MODEL, "base_url": base_url, "window": window}
    return Demo(repo=repo, server=server, flags=flags, keep=keep)


def run_demo(args: argparse.Namespace) -> int:
    launcher = getattr(args, "tui_launcher", None)  # passed in by the console script (tui/entry.py)
    if launcher is None:
        echo("ctxagent demo opens the app: run it through the `ctxagent` command", err=True)
        return 2
    keep = bool(getattr(args, "keep", False))
    demo = prepare_demo(Path(args.dir) if getattr(args, "dir", None) else None, window=args.window, keep=keep)
    echo(f"ctxagent demo: repository {demo.repo} · scripted model at {demo.flags['base_url']}", err=True)
    app_args = argparse.Namespace(
        cwd=str(demo.repo), model=demo.flags["model"], base_url=demo.flags["base_url"], window=demo.flags["window"],
        max_steps=None, strategy=None, yes=bool(getattr(args, "yes", False)), resume=None, continue_=False,
        app_label=DEMO_LABEL, initial_input=DEMO_PROMPT, probe=False,
    )
    try:
        return int(launcher(app_args))
    finally:
        demo.stop()
        echo(f"ctxagent demo: the repository is kept at {demo.repo} (delete it when done)" if keep else
             "ctxagent demo: the throwaway repository and its trust entry are removed (--keep keeps them)", err=True)
