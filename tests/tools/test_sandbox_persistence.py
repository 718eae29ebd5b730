"""Nothing a sandboxed command writes may run later outside the sandbox (issue 30, items 2 and 4).

Each test runs a real command under real bwrap through the shell tool, then looks at the host as
the user would: the user's own git (a plain `git status` / `git commit`, outside the sandbox, with a
clean configuration), the files on disk, the tool's output. Where it is cheap, the same command
without the sandbox shows that the attack is real. The git-config family (every key that runs a
program, by every route) is tests/reliability/hostile/test_git_config_family.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ctxagent.context.floor.state_paths import ensure_state_dir
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext, ToolResult
from ctxagent.tools.sandbox import SandboxPolicy
from ctxagent.tools.sandbox.policy import HIDDEN_BY_DEFAULT

REG = make_registry()
QUARANTINE_SUFFIX = ".ctxagent-quarantine"  # tools/sandbox/persistence.py: where a planted path is moved
pytestmark = pytest.mark.usefixtures("bwrap_path")
G = "g() { git -c user.name=t -c user.email=t@e.invalid -c init.defaultBranch=main \"$@\"; }; "


def sh(root: Path, command: str, policy: SandboxPolicy | None = None) -> ToolResult:
    return REG.run("shell", {"command": command}, ToolContext(root=root, config={} if policy is None else {"sandbox": policy}))


@pytest.fixture
def user(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The user's environment for their own git: a home without git config, no editor or pager set."""
    home = tmp_path / "user-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GIT_") and k not in ("EDITOR", "VISUAL", "PAGER", "LESS")}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@e.invalid",
               GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@e.invalid", XDG_CONFIG_HOME=str(home / ".config"))
    yield env


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    """A folder outside the repository (and outside what the sandbox shows: it is in /tmp) for markers."""
    m = tmp_path / "marks"
    m.mkdir()
    return m


def git(env: dict[str, str], cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=check, timeout=60,
                          stdin=subprocess.DEVNULL)


def bash(env: dict[str, str], cwd: Path, script: str) -> None:
    subprocess.run(["bash", "-c", G + script], cwd=cwd, env=env, check=True, capture_output=True, timeout=60)


def make_repo(env: dict[str, str], path: Path) -> Path:
    path.mkdir(parents=True)
    bash(env, path, "g init -q && echo one > a.txt && g add a.txt && g commit -qm one")
    return path


def plant_fsmonitor(where: str, mark: Path) -> str:
    return f"git -c init.defaultBranch=main init -q {where}; git -C {where} config core.fsmonitor 'touch {mark}'; "


# --- every .git below the root --------------------------------------------------------------------


def test_a_nested_repository_is_read_only(tmp_path: Path, user: dict[str, str], marks: Path) -> None:
    root = make_repo(user, tmp_path / "repo")
    nested = make_repo(user, root / "libs" / "inner")
    before = (nested / ".git/config").read_text()
    r = sh(root, f"git -C libs/inner config core.fsmonitor 'touch {marks}/fsmon'; echo x > libs/inner/.git/hooks/pre-commit; "
                 "rm -rf libs/inner/.git; echo end")
    assert "end" in r.content and r.content.count("Read-only file system") >= 2, r.content
    assert (nested / ".git/config").read_text() == before and not (nested / ".git/hooks/pre-commit").exists()
    git(user, nested, "status")
    assert list(marks.iterdir()) == []
    sh(root, f"git -C libs/inner config core.fsmonitor 'touch {marks}/fsmon'", SandboxPolicy(mode="off"))
    git(user, nested, "status")
    assert [p.name for p in marks.iterdir()] == ["fsmon"]  # the control: unprotected, the user's git runs it


def test_an_uninitialised_submodule_cannot_get_a_git(tmp_path: Path, user: dict[str, str], marks: Path) -> None:
    """Item 2: `git init vendor/lib` + fsmonitor in a registered submodule folder runs at the user's
    `git status` in the superproject."""
    lib = make_repo(user, tmp_path / "lib")
    root = make_repo(user, tmp_path / "repo")
    bash(user, root, f"g -c protocol.file.allow=always submodule add -q {lib} vendor/lib && g commit -qm sub && "
                     "g submodule deinit -q -f vendor/lib")
    assert (root / "vendor/lib").is_dir() and not (root / "vendor/lib/.git").exists()
    r = sh(root, plant_fsmonitor("vendor/lib", marks / "fsmon") + "echo end")
    assert "end" in r.content and "Read-only file system" in r.content, r.content
    assert not (root / "vendor/lib/.git").exists()  # the mask's mount point is gone too
    git(user, root, "status")
    assert list(marks.iterdir()) == []
    sh(root, plant_fsmonitor("vendor/lib", marks / "fsmon"), SandboxPolicy(mode="off"))
    git(user, root, "status")
    assert [p.name for p in marks.iterdir()] == ["fsmon"]


def test_a_tarball_without_git_cannot_get_one(tmp_path: Path, user: dict[str, str], marks: Path) -> None:
    """Item 4: an unpacked tarball (no `.git`): `git init . && git config core.fsmonitor …`."""
    root = tmp_path / "unpacked"
    root.mkdir()
    (root / "main.py").write_text("print('hi')\n")
    r = sh(root, plant_fsmonitor(".", marks / "fsmon") + "ls -A; echo end")
    assert "end" in r.content and "Read-only file system" in r.content, r.content
    assert sorted(p.name for p in root.iterdir()) == ["main.py"]  # no .git, not even the empty mount point
    git(user, root, "status", check=False)
    assert list(marks.iterdir()) == []
    sh(root, plant_fsmonitor(".", marks / "fsmon"), SandboxPolicy(mode="off"))
    git(user, root, "status")
    assert [p.name for p in marks.iterdir()] == ["fsmon"]


def test_a_git_made_in_a_new_folder_is_moved_aside_and_said(tmp_path: Path, user: dict[str, str], marks: Path) -> None:
    root = make_repo(user, tmp_path / "repo")
    r = sh(root, plant_fsmonitor("new/deep", marks / "fsmon") + "echo data > new/deep/f.txt; echo end")
    assert "end" in r.content and "new/deep/.git" in r.content and QUARANTINE_SUFFIX in r.content, r.content
    assert "rename it back" in r.content
    assert not (root / "new/deep/.git").exists() and (root / f"new/deep/.git{QUARANTINE_SUFFIX}/config").is_file()
    assert (root / "new/deep/f.txt").read_text() == "data\n"  # the rest of the command's work stays
    git(user, root / "new/deep", "status")  # the user's prompt in that folder: it is the superproject's now
    git(user, root, "status")
    assert list(marks.iterdir()) == []


def test_moving_a_folder_away_to_plant_a_git_in_its_place_is_caught(tmp_path: Path, user: dict[str, str],
                                                                     marks: Path) -> None:
    """A read-only mount cannot be renamed, but the folders above it can: `mv vendor vendor2` takes a
    nested repository's `.git` along, and a new `vendor/lib/.git` is then writable."""
    root = make_repo(user, tmp_path / "repo")
    make_repo(user, root / "vendor/lib")
    r = sh(root, "mv vendor vendor2 && " + plant_fsmonitor("vendor/lib", marks / "fsmon") + "echo end")
    assert "end" in r.content and "vendor/lib/.git" in r.content, r.content
    assert (root / "vendor2/lib/.git/HEAD").is_file()  # the moved repository is the user's own: left alone
    assert not (root / "vendor/lib/.git").exists()
    git(user, root / "vendor/lib", "status")
    assert list(marks.iterdir()) == []


def test_a_git_the_user_makes_between_commands_is_theirs(tmp_path: Path, user: dict[str, str]) -> None:
    root = make_repo(user, tmp_path / "repo")
    assert "exit code 0" in sh(root, "echo first").content
    make_repo(user, root / "mine")  # the user clones or inits something between two commands
    r = sh(root, "git -C mine config core.fsmonitor true; echo end")
    assert "Read-only file system" in r.content and QUARANTINE_SUFFIX not in r.content, r.content
    assert (root / "mine/.git/HEAD").is_file()


def test_a_nested_git_file_and_its_gitdir_in_the_tree_are_read_only(tmp_path: Path, user: dict[str, str]) -> None:
    root = make_repo(user, tmp_path / "repo")
    make_repo(user, root / "store")
    (root / "work").mkdir()
    os.rename(root / "store/.git", root / "gitdirs")
    (root / "work/.git").write_text("gitdir: ../gitdirs\n")
    r = sh(root, "echo evil > gitdirs/hooks/pre-commit; echo 'gitdir: /elsewhere' > work/.git; echo end")
    assert "end" in r.content and r.content.count("Read-only file system") == 2, r.content
    assert (root / "work/.git").read_text() == "gitdir: ../gitdirs\n" and not (root / "gitdirs/hooks/pre-commit").exists()


# --- what git config names -------------------------------------------------------------------------


def test_husky_hooks_are_read_only(tmp_path: Path, user: dict[str, str], marks: Path) -> None:
    """Item 2's variant: `core.hooksPath = .husky/_` (husky 9, set by `npm install`); `.husky/_/pre-commit`
    runs `.husky/pre-commit`, which a command would rewrite."""
    root = make_repo(user, tmp_path / "repo")
    bash(user, root, "mkdir -p .husky/_ && printf '#!/bin/sh\\nsh .husky/pre-commit\\n' > .husky/_/pre-commit && "
                     "chmod +x .husky/_/pre-commit && echo 'echo lint' > .husky/pre-commit && g add -A && "
                     "g commit -qm husky && g config core.hooksPath .husky/_")
    r = sh(root, f"echo 'touch {marks}/husky' >> .husky/pre-commit; echo 'touch {marks}/shim' >> .husky/_/pre-commit; "
                 "rm -rf .husky; echo end")
    assert "end" in r.content and r.content.count("Read-only file system") >= 2, r.content
    git(user, root, "commit", "-qm", "mine", "--allow-empty")
    assert list(marks.iterdir()) == []
    sh(root, f"echo 'touch {marks}/husky' >> .husky/pre-commit", SandboxPolicy(mode="off"))
    git(user, root, "commit", "-qm", "mine", "--allow-empty")
    assert [p.name for p in marks.iterdir()] == ["husky"]


def test_a_missing_hooks_folder_the_config_names_cannot_be_made(tmp_path: Path, user: dict[str, str],
                                                                marks: Path) -> None:
    root = make_repo(user, tmp_path / "repo")
    git(user, root, "config", "core.hooksPath", "tools/githooks")  # set up before `npm install` made it
    r = sh(root, f"mkdir -p tools/githooks && printf '#!/bin/sh\\ntouch {marks}/hook\\n' > tools/githooks/pre-commit "
                 "&& chmod +x tools/githooks/pre-commit; echo end")
    assert "end" in r.content and "Read-only file system" in r.content, r.content
    assert not (root / "tools").exists()  # the mask's mount point is removed afterwards
    git(user, root, "commit", "-qm", "mine", "--allow-empty")
    assert list(marks.iterdir()) == []


@pytest.mark.parametrize("exists", [True, False], ids=["existing", "missing"])
def test_an_included_config_file_in_the_tree_is_read_only(tmp_path: Path, user: dict[str, str], marks: Path,
                                                          exists: bool) -> None:
    root = make_repo(user, tmp_path / "repo")
    git(user, root, "config", "include.path", "../.gitconfig.shared")
    git(user, root, "config", "includeIf.onbranch:release.path", "../config/release.gitconfig")
    if exists:
        (root / ".gitconfig.shared").write_text("[core]\n\tautocrlf = false\n")
    r = sh(root, f"printf '[core]\\n\\tfsmonitor = touch {marks}/inc\\n' > .gitconfig.shared; mkdir -p config; "
                 f"printf '[core]\\n\\tfsmonitor = touch {marks}/if\\n' > config/release.gitconfig; echo end")
    refused = r.content.count("Read-only file system") + r.content.count("Permission denied")  # a masked file: /dev/null
    assert "end" in r.content and refused == 2, r.content
    git(user, root, "status")
    git(user, root, "checkout", "-qb", "release")
    git(user, root, "status")
    assert list(marks.iterdir()) == []
    assert (root / ".gitconfig.shared").exists() == exists and not (root / "config").exists()


def test_a_program_the_config_names_in_the_tree_is_read_only(tmp_path: Path, user: dict[str, str], marks: Path) -> None:
    root = make_repo(user, tmp_path / "repo")
    (root / "tools").mkdir()
    (root / "tools/fsmon.py").write_text("pass\n")
    git(user, root, "config", "core.fsmonitor", "python3 tools/fsmon.py")  # a word without a slash counts too
    r = sh(root, f"echo 'open(\"{marks}/fsmon\", \"w\")' >> tools/fsmon.py; echo end")
    assert "Read-only file system" in r.content, r.content
    git(user, root, "status")
    assert list(marks.iterdir()) == []


def test_a_protected_path_under_a_moved_folder_is_caught(tmp_path: Path, user: dict[str, str], marks: Path) -> None:
    root = make_repo(user, tmp_path / "repo")
    (root / "ci/hooks").mkdir(parents=True)
    git(user, root, "config", "core.hooksPath", "ci/hooks")
    r = sh(root, f"mv ci ci.old && mkdir -p ci/hooks && printf '#!/bin/sh\\ntouch {marks}/hook\\n' > ci/hooks/pre-commit "
                 "&& chmod +x ci/hooks/pre-commit; echo end")
    assert "end" in r.content and "ci/hooks was replaced" in r.content, r.content
    git(user, root, "commit", "-qm", "mine", "--allow-empty")
    assert list(marks.iterdir()) == []
    assert (root / f"ci/hooks{QUARANTINE_SUFFIX}/pre-commit").is_file()


def test_mcp_json_is_read_only_and_a_new_one_is_moved_aside(tmp_path: Path, user: dict[str, str]) -> None:
    root = make_repo(user, tmp_path / "repo")
    r = sh(root, "echo '{\"mcpServers\": {\"x\": {\"command\": \"./evil\"}}}' > .mcp.json; echo end")
    assert ".mcp.json was created by a command" in r.content and not (root / ".mcp.json").exists(), r.content
    assert (root / f".mcp.json{QUARANTINE_SUFFIX}").is_file()
    (root / ".mcp.json").write_text('{"mcpServers": {}}\n')
    r = sh(root, "echo '{}' > .mcp.json; mv .mcp.json gone.json; echo end")
    assert r.content.count("Read-only file system") == 1 and "Device or resource busy" in r.content, r.content
    assert (root / ".mcp.json").read_text() == '{"mcpServers": {}}\n'


def test_a_protected_link_repointed_is_put_back(tmp_path: Path, user: dict[str, str]) -> None:
    root = make_repo(user, tmp_path / "repo")
    (root / "conf").mkdir()
    (root / "conf/mcp.json").write_text('{"mcpServers": {}}\n')
    (root / ".mcp.json").symlink_to("conf/mcp.json")
    r = sh(root, "echo '{\"x\": 1}' > conf/evil.json; ln -sfn conf/evil.json .mcp.json; echo '{}' > conf/mcp.json; echo end")
    assert "end" in r.content and "Read-only file system" in r.content and "changed the protected link" in r.content, r.content
    assert os.readlink(root / ".mcp.json") == "conf/mcp.json" and (root / "conf/mcp.json").read_text() == '{"mcpServers": {}}\n'


def test_the_python_environment_ctxagent_runs_from_is_read_only_when_in_the_tree(
        tmp_path: Path, user: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A `.pth` file in the environment ctxagent runs from runs at ctxagent's next start, unsandboxed."""
    root = make_repo(user, tmp_path / "repo")
    site = root / ".venv/lib/python3/site-packages"
    site.mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(root / ".venv"))
    r = sh(root, "echo 'import os; os.system(\"touch /tmp/pwned\")' > .venv/lib/python3/site-packages/evil.pth; echo x > ok.txt")
    assert "Read-only file system" in r.content and not (site / "evil.pth").exists(), r.content
    assert (root / "ok.txt").exists()


# --- the scan -----------------------------------------------------------------------------------------


def test_a_later_look_lists_only_the_changed_folders(tmp_path: Path, user: dict[str, str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The tree is walked once; later looks stat each folder and list only those whose ctime changed
    (an mtime set back does not hide a change: ctime cannot be set)."""
    from ctxagent.tools.sandbox.dotgit import RECENT_NS, tree_index

    root = make_repo(user, tmp_path / "repo").resolve()
    for i in range(50):
        (root / f"pkg{i}/sub").mkdir(parents=True)
    index = tree_index(str(root))
    index.refresh()
    time.sleep(RECENT_NS / 1e9 + 0.2)  # the folders made just now are settled (see dotgit's RECENT_NS)
    index.refresh()
    listed: list[str] = []
    real = os.scandir

    def counting(path: str) -> object:
        listed.append(os.path.relpath(path, root))
        return real(path)
    monkeypatch.setattr(os, "scandir", counting)
    assert index.refresh() == {str(root / ".git"): index.refresh()[str(root / ".git")]} and listed == []
    (root / "pkg9/sub/x/.git").mkdir(parents=True)
    os.utime(root / "pkg9/sub", ns=(1, 1))
    found = index.refresh()
    assert sorted(set(listed)) == ["pkg9/sub", "pkg9/sub/x"], listed
    assert sorted(found) == [str(root / ".git"), str(root / "pkg9/sub/x/.git")]


# --- credential stores, other projects, Unix sockets -----------------------------------------------------

# The issue's list ("credential stores the sandbox still shows") and shell histories, by name: each must
# be among the defaults, and each is read below.
ISSUE_STORES = ("~/.claude/.credentials.json", "~/.codex/auth.json", "~/.pgpass", "~/.my.cnf", "~/.vault-token",
                "~/.cache/huggingface/token", "~/.terraform.d/credentials.tfrc.json", "~/.config/rclone/rclone.conf",
                "~/.m2/settings.xml", "~/.config/git/credentials", "~/.env", "~/.bash_history", "~/.zsh_history",
                "~/.local/share/fish/fish_history", "~/.claude/projects")
HIDDEN_FOLDERS = {"~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.kube", "~/.docker", "~/.config/gh",
                  "~/.password-store", "~/.local/share/keyrings", "~/.claude/projects", "~/.codex/sessions"}


def test_the_issues_stores_are_hidden_by_default() -> None:
    assert set(ISSUE_STORES) <= set(HIDDEN_BY_DEFAULT)


@pytest.mark.parametrize("entry", sorted(set(HIDDEN_BY_DEFAULT) | set(ISSUE_STORES)))
def test_every_default_credential_store_reads_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str) -> None:
    root = tmp_path / "repo"
    home = root / "home"  # the host's /tmp is private to the sandbox: a home inside the repository is visible
    secret = f"CTXAGENT-TEST-SECRET-{abs(hash(entry)):x}"
    target = home / entry[2:]
    if entry in HIDDEN_FOLDERS:
        (target / "sub").mkdir(parents=True)
        (target / "sub/key").write_text(secret + "\n")
        read = f"cat {target}/sub/key; ls -AR {target}"
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(secret + "\n")
        read = f"cat {target}"
    monkeypatch.setenv("HOME", str(home))
    r = sh(root, f"{read}; echo end")
    assert "end" in r.content and secret not in r.content, r.content
    assert secret in sh(root, read, SandboxPolicy(mode="off")).content  # the control: the same read, unsandboxed


def test_other_projects_state_folders_read_empty(tmp_path: Path, user: dict[str, str]) -> None:
    """Sessions, spill files and memory of the other projects ctxagent keeps state for (its registry)."""
    root = make_repo(user, tmp_path / "repo")
    other = make_repo(user, root / "elsewhere")  # visible to the sandbox (the host's /tmp is not)
    ensure_state_dir(root)
    (ensure_state_dir(other) / "sessions").mkdir()
    (other / ".ctxagent/sessions/s.jsonl").write_text('{"text": "OTHER-PROJECT-TRANSCRIPT"}\n')
    (root / ".ctxagent/mine.txt").write_text("THIS-PROJECT\n")
    r = sh(root, "cat elsewhere/.ctxagent/sessions/s.jsonl .ctxagent/mine.txt; ls -A elsewhere/.ctxagent; echo end")
    assert "end" in r.content and "OTHER-PROJECT-TRANSCRIPT" not in r.content, r.content
    assert "THIS-PROJECT" in r.content  # this repository's own state stays readable (and read-only)


SOCKET_PROBE = """
import socket, sys
a, b = socket.socketpair(); a.sendall(b"pair"); print("SOCKETPAIR", b.recv(4).decode())
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
except PermissionError:
    print("AF_UNIX REFUSED")
else:
    s.settimeout(5); s.connect(sys.argv[1]); print("CONNECTED", s.recv(16).decode())
"""


def test_a_unix_socket_under_home_is_unreachable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 5: a docker socket under $HOME (Colima, Rancher Desktop, Podman) is root on the host."""
    root = tmp_path / "repo"
    (root / "h/.colima").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(root / "h"))
    path = root / "h/.colima/docker.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)
    reached = threading.Event()

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                reached.set()
                conn.sendall(b"docker-api")
                conn.close()
    threading.Thread(target=serve, daemon=True).start()
    (root / "probe.py").write_text(SOCKET_PROBE)
    try:
        r = sh(root, f"python3 probe.py {path}")
        assert "SOCKETPAIR pair" in r.content and "AF_UNIX REFUSED" in r.content, r.content
        assert not reached.wait(0.5)
        r = sh(root, f"python3 probe.py {path}", SandboxPolicy(unix_sockets=True))  # the user's own opt-in
        assert "CONNECTED docker-api" in r.content and reached.wait(5), r.content
    finally:
        server.close()


def test_common_tools_still_work(tmp_path: Path, user: dict[str, str]) -> None:
    """With AF_UNIX refused: pytest with tmp_path, asyncio (socketpair), multiprocessing, git, node."""
    root = make_repo(user, tmp_path / "repo")
    (root / "test_it.py").write_text(
        "import asyncio, multiprocessing, subprocess\n"
        "def test_tmp(tmp_path):\n    (tmp_path / 'f').write_text('x'); assert (tmp_path / 'f').read_text() == 'x'\n"
        "def test_asyncio():\n    async def main():\n        p = await asyncio.create_subprocess_exec('echo', 'hi', stdout=-1)\n"
        "        return (await p.communicate())[0]\n    assert asyncio.run(main()) == b'hi\\n'\n"
        "def _sq(x):\n    return x * x\n"
        "def test_pool():\n    with multiprocessing.get_context('fork').Pool(2) as pool:\n        assert pool.map(_sq, [1, 2]) == [1, 4]\n")
    r = REG.run("run_tests", {"command": f"{sys.executable} -m pytest -q -p no:cacheprovider test_it.py"}, ToolContext(root=root))
    assert "3 passed" in r.content, r.content
    r = sh(root, "git status --short && git log --oneline | wc -l && echo GIT-OK")
    assert "GIT-OK" in r.content and "?? test_it.py" in r.content, r.content
    if shutil.which("node"):
        r = sh(root, "node -e \"const c = require('child_process'); console.log(c.execSync('echo from-child').toString().trim())\"")
        assert "from-child" in r.content, r.content
    if shutil.which("npm"):
        assert "exit code 0" in sh(root, "npm --version").content


def test_a_fifo_or_a_hostile_git_file_does_not_stall_the_launch(tmp_path: Path, user: dict[str, str]) -> None:
    root = make_repo(user, tmp_path / "repo")
    (root / "a").mkdir()
    os.mkfifo(root / "a/.git")  # opening it for reading would wait for a writer forever
    (root / "b").mkdir()
    (root / "b/.git").write_text("gitdir: " + "../" * 40 + "nowhere\n")
    (root / ".gitmodules").symlink_to("/dev/zero")
    r = sh(root, "ls -A a; echo ok > b.txt; echo end")
    assert "end" in r.content and (root / "b.txt").read_text() == "ok\n", r.content
    assert (root / "a/.git").is_fifo()


def test_a_git_planted_while_another_launch_runs_is_caught_at_the_next_command(tmp_path: Path,
                                                                              user: dict[str, str]) -> None:
    """Two launches at once (a sub-agent's command, a hook): the second must not take the first's
    plant for the user's."""
    from ctxagent.tools.sandbox import prepare_launch

    root = make_repo(user, tmp_path / "repo")
    first = prepare_launch("sleep 60", root, SandboxPolicy())  # its guard is active until finish()
    try:
        (root / "planted/.git").mkdir(parents=True)  # as the first launch's process would
        (root / "planted/.git/config").write_text("[core]\n\tfsmonitor = touch /tmp/x\n")
        r = sh(root, "echo second")
        assert "planted/.git appeared while a sandboxed command ran" in r.content, r.content
        assert not (root / "planted/.git").exists()
    finally:
        first.finish()


@pytest.mark.parametrize("how", ["server", "backstop"])
def test_a_server_that_runs_for_hours_does_not_take_the_users_git_for_its_own(tmp_path: Path, user: dict[str, str],
                                                                             how: str) -> None:
    """A local MCP server lives as long as the session: what the user clones meanwhile stays theirs.
    Its launch says it is a server; one that was never finished counts as one after LONG_LAUNCH_S."""
    from ctxagent.tools.sandbox import prepare_launch
    from ctxagent.tools.sandbox.persistence import LONG_LAUNCH_S
    from ctxagent.tools.shell import MAX_TIMEOUT

    assert LONG_LAUNCH_S > MAX_TIMEOUT  # every command ends (or is killed) before it counts as a server
    root = make_repo(user, tmp_path / "repo")
    server = prepare_launch("exec sleep 3600", root, SandboxPolicy(), server=how == "server")
    assert server._guard is not None
    if how == "backstop":
        server._guard.started -= LONG_LAUNCH_S + 1  # it has been running for longer than any command may
    make_repo(user, root / "cloned")  # the user's own clone, in another terminal
    r = sh(root, "echo command")
    assert QUARANTINE_SUFFIX not in r.content and (root / "cloned/.git/HEAD").is_file(), r.content
    assert server.finish() == [] and (root / "cloned/.git/HEAD").is_file()


@pytest.mark.parametrize("manager", ["lefthook", "pre-commit"])
def test_a_hook_managers_config_is_read_only_and_a_new_one_moved_aside(tmp_path: Path, user: dict[str, str],
                                                                     marks: Path, manager: str) -> None:
    """A hook manager's installed hook reads a file of the work tree that names the programs to run
    (lefthook.yml, .pre-commit-config.yaml). Here the "manager" runs that file as a script, which is
    what its entries amount to."""
    config, header = {"lefthook": ("lefthook.yml", "# lefthook's hook: call_lefthook run pre-commit"),
                      "pre-commit": (".pre-commit-config.yaml", "# File generated by pre-commit: https://pre-commit.com")}[manager]
    root = make_repo(user, tmp_path / "repo")
    hook = root / ".git/hooks/pre-commit"
    hook.write_text(f"#!/bin/sh\n{header}\n[ -f {config} ] && sh {config}\nexit 0\n")
    hook.chmod(0o755)
    r = sh(root, f"echo 'touch {marks}/hook' > {config}; echo end")
    assert f"{config} was created by a command" in r.content and not (root / config).exists(), r.content
    git(user, root, "commit", "-qm", "mine", "--allow-empty")
    (root / config).write_text("true\n")  # the user's own config
    r = sh(root, f"echo 'touch {marks}/hook' >> {config}; echo end")
    assert "Read-only file system" in r.content, r.content
    git(user, root, "commit", "-qm", "mine", "--allow-empty")
    assert list(marks.iterdir()) == []
    sh(root, f"echo 'touch {marks}/hook' >> {config}", SandboxPolicy(mode="off"))
    git(user, root, "commit", "-qm", "mine", "--allow-empty")
    assert [p.name for p in marks.iterdir()] == ["hook"]


def test_a_husky_hooks_lint_staged_config_is_read_only(tmp_path: Path, user: dict[str, str]) -> None:
    """husky's `.husky/pre-commit` runs `npx lint-staged`, whose config names the commands to run."""
    root = make_repo(user, tmp_path / "repo")
    bash(user, root, "mkdir -p .husky/_ && printf '#!/bin/sh\\nsh .husky/pre-commit\\n' > .husky/_/pre-commit && "
                     "echo 'npx lint-staged' > .husky/pre-commit && echo '{\"*.py\": \"ruff\"}' > .lintstagedrc.json && "
                     "g config core.hooksPath .husky/_")
    r = sh(root, "echo '{\"*\": \"touch /tmp/x\"}' > .lintstagedrc.json; echo end")
    assert "Read-only file system" in r.content, r.content
    assert (root / ".lintstagedrc.json").read_text() == '{"*.py": "ruff"}\n'
