"""Family: every git config key that runs a program, by every route a sandboxed command could use to
set it (issue 30: a file written inside the sandbox is data until the user runs it).

For each key, a sandboxed command (the shell tool, real bwrap) tries to make the user's own plain
git — `git status`, `git commit`, `git diff`, `git fetch`, `git log`, ... run afterwards outside
the sandbox with the user's own (clean) configuration — run a program that leaves a marker. Routes:

- config:  the key in the repository's `.git/config`;
- include: the key in a file of the tree that the user's `.git/config` includes;
- program: the program of the tree that the user's own config already names for the key (husky's
           `.husky/pre-commit` for hooks, a script a hook runs, `./tools/run.sh` for the rest), rewritten;
- nested:  a new repository in a new folder with the key, where the user's prompt or git would run;
- tarball: a root that has no `.git` (an unpacked archive): `git init .` and the key.

Every case runs twice: sandboxed (no marker may appear), and the same command unsandboxed in a
twin repository (the marker must appear): the attack is real, and the sandbox is what stops it.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from ctxagent.context.errors import SandboxUnavailableError
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext
from ctxagent.tools.sandbox import DEFAULT_POLICY, SandboxPolicy, find_bwrap

REG = make_registry()
G = "g() { git -c user.name=t -c user.email=t@e.invalid -c init.defaultBranch=main \"$@\"; }; "
SCRIPT = "tools/run.sh"  # the program route's script, as the user's config names it


@dataclass(frozen=True)
class Key:
    plant: str  # sets the key; {P} is the marker program, $GC the `git config` of the route
    user: tuple[str, ...]  # the user's own git command afterwards
    setup: str = ""  # what the command needs in the repository (changes, attributes, remotes)
    program: str = ""  # the user's own config naming a file of the tree (default: the plant, with ./tools/run.sh)
    script: str = SCRIPT  # the file of the tree the program route rewrites ("": no program route)
    routes: tuple[str, ...] = ("config", "include", "program", "nested", "tarball")
    tty: bool = False  # the user's command runs on a terminal (git pages only there)

    def user_config(self) -> str:
        return self.program or self.plant.replace("{P}", f"./{SCRIPT}")


ATTRS = "printf '*.txt diff=drv filter=drv merge=drv\\n' > .gitattributes && g add .gitattributes && g commit -qm attrs && "
CHANGE = "echo two > a.txt"
REMOTE = "g remote add origin {URL}"
KEYS: dict[str, Key] = {
    "core.fsmonitor": Key("$GC core.fsmonitor {P}", ("status",)),
    "core.hooksPath": Key("mkdir -p .hk && printf '#!/bin/sh\\n{P}\\n' > .hk/pre-commit && chmod +x .hk/pre-commit && "
                          "$GC core.hooksPath .hk", ("commit", "-qm", "x", "--allow-empty"),
                          program="mkdir -p .husky/_ && printf '#!/bin/sh\\nsh .husky/pre-commit\\n' > .husky/_/pre-commit && "
                                  "chmod +x .husky/_/pre-commit && echo 'exit 0' > .husky/pre-commit && "
                                  "$GC core.hooksPath .husky/_", script=".husky/pre-commit"),
    "hooks (a hook's script)": Key("printf '#!/bin/sh\\n{P}\\n' > \"$(git rev-parse --git-path hooks)/pre-commit\" && "
                                   "chmod +x \"$(git rev-parse --git-path hooks)/pre-commit\"",
                                   ("commit", "-qm", "x", "--allow-empty"),
                                   program="mkdir -p scripts && echo 'exit 0' > scripts/check.sh && "
                                           "printf '#!/bin/sh\\nsh ./scripts/check.sh\\n' > .git/hooks/pre-commit && "
                                           "chmod +x .git/hooks/pre-commit", script="scripts/check.sh",
                                   routes=("config", "program", "nested", "tarball")),  # no config key to include
    "core.sshCommand": Key("$GC core.sshCommand {P}", ("fetch", "-q", "origin"), REMOTE.replace("{URL}", "ssh://git@127.0.0.1:9/x")),
    "core.gitProxy": Key("$GC core.gitProxy {P}", ("fetch", "-q", "origin"), REMOTE.replace("{URL}", "git://127.0.0.1:9/x")),
    "core.editor": Key("$GC core.editor {P}", ("commit", "--allow-empty")),
    "sequence.editor": Key("$GC sequence.editor {P}", ("rebase", "-i", "HEAD~1"), "g commit -qm two --allow-empty"),
    "core.pager": Key("$GC core.pager {P}", ("log",), tty=True),
    "pager.log": Key("$GC pager.log {P}", ("log",), tty=True),
    "diff.external": Key("$GC diff.external {P}", ("diff",), CHANGE),
    "diff.<driver>.textconv": Key("$GC diff.drv.textconv {P}", ("diff",), ATTRS + CHANGE),
    "diff.<driver>.command": Key("$GC diff.drv.command {P}", ("diff",), ATTRS + CHANGE),
    "filter.<driver>.clean": Key("$GC filter.drv.clean {P}", ("diff",), ATTRS + CHANGE),
    "filter.<driver>.smudge": Key("$GC filter.drv.smudge {P}", ("checkout", "--", "a.txt"), ATTRS + CHANGE),
    "filter.<driver>.process": Key("$GC filter.drv.process {P}", ("diff",), ATTRS + CHANGE),
    "merge.<driver>.driver": Key("$GC merge.drv.driver {P}", ("merge", "-q", "side"),
                                 ATTRS + "g checkout -qb side && echo side > a.txt && g commit -qam side && "
                                 "g checkout -q main && echo main > a.txt && g commit -qam main"),
    "credential.helper": Key("$GC credential.helper '!{P}'", ("fetch", "-q", "origin"), REMOTE),
    "core.askPass": Key("$GC core.askPass {P}", ("fetch", "-q", "origin"), REMOTE),
    "gpg.program": Key("$GC commit.gpgSign true && $GC gpg.program {P}", ("commit", "-qm", "x", "--allow-empty")),
    "alias.<name> (!)": Key("$GC alias.st '!{P}'", ("st",)),
    "remote.<name>.uploadpack": Key("$GC remote.origin.uploadpack {P}", ("fetch", "-q", "origin"), "g remote add origin ."),
    "include.path": Key("printf '[core]\\n\\tfsmonitor = {P}\\n' > evil.gitconfig && $GC include.path \"$PWD/evil.gitconfig\"",
                        ("status",), routes=("config", "include", "nested", "tarball")),  # program: the include route
}
CASES = [(k, r) for k, key in KEYS.items() for r in key.routes]


@pytest.fixture(scope="module")
def unauthorized() -> Iterator[str]:
    """A loopback HTTP server that answers 401 to everything: git then asks for credentials."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="x"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/x.git"
    server.shutdown()
    server.server_close()


@pytest.fixture
def user(tmp_path: Path) -> dict[str, str]:
    """The user's environment: their own global config (an editor, a pager, an alias `st`), no
    terminal to prompt on, nothing of the test runner's git settings."""
    home = tmp_path / "user-home"
    home.mkdir()
    (home / ".gitconfig").write_text("[core]\n\teditor = true\n\tpager = cat\n[sequence]\n\teditor = true\n"
                                     "[alias]\n\tst = status\n[user]\n\tname = u\n\temail = u@e.invalid\n"
                                     "[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "SSH_")) and k not in ("EDITOR", "VISUAL", "PAGER", "LESS", "DISPLAY")}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0", XDG_CONFIG_HOME=str(home / ".config"))
    return env


def _bash(env: dict[str, str], cwd: Path, script: str) -> None:
    out = subprocess.run(["bash", "-c", "set -e; " + G + script], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr


def _repo(env: dict[str, str], path: Path, key: Key, route: str, url: str) -> Path:
    """The user's repository as it was before the command: one commit, what the key's command
    needs, and for the include and program routes the user's own config that names a file of the tree."""
    path.mkdir(parents=True)
    (path / "a.txt").write_text("one\n")
    if route == "tarball":
        return path
    _bash(env, path, "g init -q && g add a.txt && g commit -qm one")
    (path / "tools").mkdir()
    (path / SCRIPT).write_text("#!/bin/sh\nexit 0\n")
    (path / SCRIPT).chmod(0o755)
    if key.setup:
        _bash(env, path, key.setup.replace("{URL}", url))
    if route == "include":
        (path / "shared.gitconfig").write_text("[core]\n\tautocrlf = false\n")
        _bash(env, path, "git config include.path ../shared.gitconfig")
    if route == "program":
        _bash(env, path, "GC='git config'; " + key.user_config())
    return path


def _attack(key: Key, route: str, prog: Path, mark: Path, url: str) -> str:
    """The command a model (or a test run) would make."""
    plant = key.plant.replace("{P}", str(prog))
    if route == "program":
        return f"printf '#!/bin/sh\\ntouch {mark}\\n' > {key.script}; echo end"
    if route == "include":
        return f"GC='git config -f shared.gitconfig'; {plant}; echo end"
    setup = key.setup.replace("{URL}", url)
    made = "g init -q && g add a.txt && g commit -qm one" + (f" && {setup}" if setup else "")
    if route == "nested":
        return f"{G}mkdir -p sub && cd sub && echo one > a.txt && {made} && GC='git config' && {plant}; echo end"
    if route == "tarball":
        return f"{G}{made} && GC='git config' && {plant}; echo end"
    return f"GC='git config'; {plant}; echo end"


def _user_runs(env: dict[str, str], repo: Path, key: Key, route: str) -> None:
    where = repo / "sub" if route == "nested" else repo
    if not key.tty:
        subprocess.run(["git", *key.user], cwd=where, env=env, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        return
    master, terminal = os.openpty()  # the user's terminal: git starts a pager only there
    try:
        subprocess.run(["git", *key.user], cwd=where, env={**env, "TERM": "xterm"}, stdout=terminal, stderr=terminal,
                       stdin=subprocess.DEVNULL, timeout=60)
    finally:
        os.close(terminal)
        with contextlib.suppress(OSError):
            while os.read(master, 65536):
                pass
        os.close(master)


@pytest.mark.parametrize(("name", "route"), CASES, ids=[f"{k}-{r}" for k, r in CASES])
def test_a_sandboxed_command_cannot_make_the_users_git_run_a_program(
        tmp_path: Path, user: dict[str, str], unauthorized: str, name: str, route: str) -> None:
    try:
        find_bwrap(DEFAULT_POLICY)
    except SandboxUnavailableError as exc:
        pytest.skip(f"bubblewrap cannot run on this machine: {exc}")
    key = KEYS[name]
    outcomes = {}
    for policy in (DEFAULT_POLICY, SandboxPolicy(mode="off")):
        base = tmp_path / policy.mode
        marks = base / "marks"
        marks.mkdir(parents=True)
        prog = base / "prog.sh"  # outside the repository, and in /tmp: invisible inside the sandbox
        prog.write_text(f"#!/bin/sh\ntouch {marks}/ran\n")
        prog.chmod(0o755)
        repo = _repo(user, base / "repo", key, route, unauthorized)
        r = REG.run("shell", {"command": _attack(key, route, prog, marks / "ran", unauthorized)},
                    ToolContext(root=repo, config={"sandbox": policy}))
        assert "end" in r.content, r.content
        _user_runs(user, repo, key, route)
        outcomes[policy.mode] = (sorted(p.name for p in marks.iterdir()), r.content)
    assert outcomes["off"][0] == ["ran"], f"the attack does not work even unsandboxed: {outcomes['off'][1]}"
    assert outcomes["workspace-write"][0] == [], outcomes["workspace-write"][1]


def test_the_family_names_every_key_the_issue_lists() -> None:
    listed = {"core.fsmonitor", "core.hooksPath", "core.sshCommand", "core.editor", "sequence.editor", "core.pager",
              "pager.log", "diff.external", "diff.<driver>.textconv", "filter.<driver>.clean", "filter.<driver>.smudge",
              "filter.<driver>.process", "credential.helper", "gpg.program", "alias.<name> (!)", "include.path"}
    assert listed <= set(KEYS) and len(CASES) >= 5 * len(KEYS) - 2
