"""The sandbox's properties, each proved from inside it: real bwrap, real bash, real sockets and git.

Every check runs a command through the shell tool (or run_tests) and then looks at the host: a
write that the sandbox refused is also absent on disk, a connection it blocked never reached the
test's listening socket.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from ctxagent.context.errors import SandboxUnavailableError
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext, ToolResult
from ctxagent.tools.sandbox import SandboxPolicy, find_bwrap, probe, sandbox_checks
from ctxagent.tools.shell import run_command

REG = make_registry()
pytestmark = pytest.mark.usefixtures("bwrap_path")


def sh(root: Path, command: str, policy: SandboxPolicy | None = None, tool: str = "shell") -> ToolResult:
    config = {} if policy is None else {"sandbox": policy}
    return REG.run(tool, {"command": command}, ToolContext(root=root, config=config))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "a.txt").write_text("alpha\n")
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "add", "a.txt"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"], cwd=root, check=True)
    return root


# --- the file system ----------------------------------------------------------------------------


def test_writes_inside_the_repository_succeed(repo: Path) -> None:
    r = sh(repo, "mkdir -p src/深 && echo 写入 > src/深/new.txt && echo ok >> a.txt && rm -f gone.txt && echo done")
    assert r.meta["exit_code"] == 0 and "done" in r.content, r.content
    assert (repo / "src/深/new.txt").read_text() == "写入\n"
    assert (repo / "a.txt").read_text() == "alpha\nok\n"


def test_writes_outside_the_repository_fail(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("original\n")
    home_file = Path.home() / f".ctxagent-sandbox-test-{os.getpid()}"
    venv_file = Path(sys.prefix) / f"ctxagent-sandbox-test-{os.getpid()}"
    r = sh(repo, f"echo pwned >> {victim}; echo pwned > {outside}/new.txt; echo pwned > ../sibling.txt; "
                 f"touch {home_file}; touch {venv_file}; touch /etc/ctxagent-test; echo end")
    assert "end" in r.content
    assert "Read-only file system" in r.content  # $HOME, the venv, /etc
    assert victim.read_text() == "original\n"  # the host's /tmp is not even visible inside
    assert not (outside / "new.txt").exists() and not (tmp_path / "sibling.txt").exists()
    assert not home_file.exists() and not venv_file.exists() and not Path("/etc/ctxagent-test").exists()


def test_git_and_state_folders_are_read_only(repo: Path) -> None:
    state = repo / ".ctxagent"
    state.mkdir()
    (state / "config.toml").write_text("# mine\n")
    config_before = (repo / ".git/config").read_text()
    r = sh(repo, "echo evil > .git/hooks/pre-commit; echo '[core]' >> .git/config; echo x > .ctxagent/memory.db; "
                 "echo x >> .ctxagent/config.toml; rm -rf .ctxagent; mv .git .git-moved; "
                 "git -c user.name=t -c user.email=t@t commit -qam two; echo end")
    assert "end" in r.content and r.content.count("Read-only file system") >= 4, r.content
    assert not (repo / ".git/hooks/pre-commit").exists()
    assert (repo / ".git/config").read_text() == config_before
    assert sorted(p.name for p in state.iterdir()) == ["config.toml"] and (state / "config.toml").read_text() == "# mine\n"
    assert (repo / ".git").is_dir() and not (repo / ".git-moved").exists()
    log = subprocess.run(["git", "log", "--oneline"], cwd=repo, capture_output=True, text=True, check=True).stdout
    assert len(log.splitlines()) == 1  # git commit inside the sandbox could not write objects or the index


def test_a_missing_state_folder_cannot_be_planted(repo: Path) -> None:
    r = sh(repo, "mkdir -p .ctxagent/sessions && echo planted > .ctxagent/memory.db; ls -A .ctxagent; echo end")
    assert "end" in r.content
    assert not (repo / ".ctxagent").exists()  # nor is the empty mount point left behind


def test_a_worktree_gitdir_inside_the_root_is_read_only(tmp_path: Path) -> None:
    root = tmp_path / "wt"
    (root / "gitdir/hooks").mkdir(parents=True)
    (root / ".git").write_text("gitdir: gitdir\n")
    r = sh(root, "echo evil > gitdir/hooks/post-checkout; echo x > .git; echo end")
    assert "end" in r.content and r.content.count("Read-only file system") == 2, r.content
    assert not (root / "gitdir/hooks/post-checkout").exists() and (root / ".git").read_text() == "gitdir: gitdir\n"


def test_a_symlinked_protected_folder_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / "decoy").mkdir(parents=True)
    (root / ".ctxagent").symlink_to("decoy")
    r = sh(root, "echo planted > .ctxagent/x")
    assert r.is_error and "symbolic link" in r.content and not (root / "decoy/x").exists()


def test_read_only_mode_refuses_writes_inside_the_repository(repo: Path) -> None:
    r = sh(repo, "echo x > new.txt; echo y >> a.txt; echo tmp > /tmp/t && cat /tmp/t; echo end", SandboxPolicy(mode="read-only"))
    assert "end" in r.content and r.content.count("Read-only file system") == 2 and "tmp" in r.content, r.content
    assert not (repo / "new.txt").exists() and (repo / "a.txt").read_text() == "alpha\n"


def test_toolchains_in_the_hosts_tmp_stay_usable_read_only(repo: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    venv = tmp_path / "venv"  # as a CI job's virtualenv in a mktemp -d
    (venv / "bin").mkdir(parents=True)
    (venv / "lib").mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib/data.txt").write_text("from the venv\n")
    tool = venv / "bin/mytool"
    tool.write_text(f"#!/bin/sh\ncat {venv}/lib/data.txt\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{venv / 'bin'}:{os.environ['PATH']}")
    r = sh(repo, f"mytool; touch {venv}/lib/x; ls /tmp | grep -c . ; echo end")
    assert "from the venv" in r.content and "Read-only file system" in r.content, r.content
    assert not (venv / "lib/x").exists()


def test_hidden_paths_show_empty(repo: Path) -> None:
    (repo / "keys").mkdir()
    (repo / "keys/id_rsa").write_text("PRIVATE\n")
    (repo / "token.txt").write_text("SECRET\n")
    policy = SandboxPolicy(hidden=(str(repo / "keys"), str(repo / "token.txt")))
    r = sh(repo, "ls -A keys; cat keys/id_rsa token.txt; echo end", policy)
    assert "end" in r.content and "PRIVATE" not in r.content and "SECRET" not in r.content, r.content


def test_ctxagents_user_folders_show_empty(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = repo / "ctxhome"  # somewhere a command could otherwise read (the host's /tmp is hidden anyway)
    (home / "config").mkdir(parents=True)
    (home / "config/config.toml").write_text('anthropic_api_key = "sk-ant-api03-UserConfigKeyUserConfig"\n')
    (home / "memory.txt").write_text("another project's memory\n")
    monkeypatch.setenv("CTXAGENT_HOME", str(home))
    r = sh(repo, "cat ctxhome/config/config.toml ctxhome/memory.txt; ls -A ctxhome; echo end")
    assert "end" in r.content and "UserConfigKey" not in r.content and "another project" not in r.content, r.content


def test_host_sockets_and_processes_are_out_of_sight(repo: Path) -> None:
    r = sh(repo, f"ls -A /run; kill -0 {os.getpid()} 2>/dev/null && echo SEES-HOST-PID; "
                 "ls /proc | grep -c '^[0-9]'; grep CapEff /proc/self/status; echo end")
    lines = r.content.splitlines()
    assert "end" in lines and "SEES-HOST-PID" not in r.content, r.content
    assert lines[1].isdigit() and int(lines[1]) < 10  # bwrap, bash and its children only: /run is empty
    assert "CapEff:\t0000000000000000" in r.content  # no capabilities, also when ctxagent runs as root


# --- the network ----------------------------------------------------------------------------------


@pytest.fixture
def listener() -> tuple[int, threading.Event]:
    """A real listening socket on the host's loopback; the event is set if anything connects."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)
    reached = threading.Event()
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            reached.set()
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], reached
    stop.set()
    thread.join(2)
    server.close()


CONNECT = "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('CONNECTED')\""


def test_a_loopback_port_on_the_host_is_unreachable(repo: Path, listener: tuple[int, threading.Event]) -> None:
    port, reached = listener
    r = sh(repo, CONNECT.format(port=port) + f"; (echo hi > /dev/tcp/127.0.0.1/{port}) 2>&1; echo end")
    assert "end" in r.content and "CONNECTED" not in r.content and "refused" in r.content.lower(), r.content
    assert not reached.wait(0.5)


def test_the_network_when_the_policy_allows_it(repo: Path, listener: tuple[int, threading.Event]) -> None:
    port, reached = listener
    r = sh(repo, CONNECT.format(port=port), SandboxPolicy(network=True))
    assert "CONNECTED" in r.content and reached.wait(5), r.content  # the same probe does reach: it is a real test


def test_the_sandbox_has_its_own_loopback(repo: Path) -> None:
    code = ("import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1); "
            "c = socket.create_connection(s.getsockname(), timeout=3); c.sendall(b'x'); print('LOCAL', s.accept()[0].recv(1))")
    r = sh(repo, f'python3 -c "{code}"')
    assert "LOCAL b'x'" in r.content, r.content  # a project's tests that serve on 127.0.0.1 still run


def test_the_seccomp_filter_refuses_what_namespaces_leave_open(repo: Path) -> None:
    code = ("import ctypes, socket, errno\n"
            "try:\n socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM); print('VSOCK OPEN')\n"
            "except PermissionError: print('VSOCK REFUSED')\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "nr = {'x86_64': 250, 'aarch64': 219}[__import__('platform').machine()]\n"
            "print('KEYCTL', libc.syscall(nr, 0, 0, 0, 0, 0), errno.errorcode[ctypes.get_errno()])\n")
    (repo / "probe.py").write_text(code)
    r = sh(repo, "python3 probe.py")
    assert "VSOCK REFUSED" in r.content and "KEYCTL -1 EPERM" in r.content, r.content


# --- the environment -------------------------------------------------------------------------------

SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-Zz9yX8wV7uT6sR5qP4oN3mL2kJ1",
    "OPENAI_API_KEY": "sk-proj-Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0",
    "GITLAB_TOKEN": "glpat-Qw3rTy7uI0oPaSdFgHjK",
    "AZURE_STORAGE_CONNECTION_STRING": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Xk29vLq+Zp0/Yt==",
    "HTTP_AUTHORIZATION": "Basic dXNlcjpodW50ZXIyaHVudGVyMg==",
    "SENTRY_DSN": "https://f00dfacecafe4b1d@o12345.ingest.sentry.io/678",
    "MYSQL_PWD": "hunter2-mysql-pw",
    "NPM_CONFIG__AUTH": "bnBtOnRva2VuLXZhbHVlLTk5",
    # secret values under names the allowlist lets through: dropped by their shape
    "LC_PAPER": "sk-ant-api03-LcPaperKeyLcPaperKey77",
    "TZ": "glpat-TzTokenTzTokenTzTo",
}


def _leaks(text: str) -> list[str]:
    """Secrets found in `text` as they are, reversed (`rev`), or cut into lines (`fold`)."""
    joined = text.replace("\n", "")
    return [name for name, value in SECRETS.items()
            if value in text or value[::-1] in text or value in joined or value[::-1] in joined]


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


@pytest.mark.usefixtures("secret_env")
@pytest.mark.parametrize("mode", ["workspace-write", "read-only", "off"])
def test_env_shows_no_secret(repo: Path, mode: str) -> None:
    r = sh(repo, "env; echo end", SandboxPolicy(mode=mode))  # type: ignore[arg-type]
    assert "end" in r.content and "PATH=" in r.content and "HOME=" in r.content
    assert _leaks(r.content) == []
    assert "LC_PAPER=" not in r.content and "TZ=" not in r.content


PROC_ENVIRON = ("for f in /proc/$PPID/environ /proc/1/environ; do echo \"== $f\"; tr '\\0' '\\n' < $f; "
                "tr '\\0' '\\n' < $f | rev; tr -d '\\0' < $f | fold -w 20; done; echo end")
RUNNER = "import sys; from pathlib import Path; from ctxagent.tools.shell import run_command; " \
         "from ctxagent.tools.sandbox import SandboxPolicy; " \
         "print(run_command(sys.argv[1], Path(sys.argv[2]), policy=SandboxPolicy(mode=sys.argv[3])).output)"


def _from_a_process_holding_the_keys(repo: Path, mode: str) -> str:
    """The command's output when run by a process that got the keys at its start, as ctxagent does
    (/proc/PID/environ shows a process's initial environment, not later changes to os.environ)."""
    env = {**os.environ, **SECRETS}
    proc = subprocess.run([sys.executable, "-c", RUNNER, PROC_ENVIRON, str(repo), mode], env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    return proc.stdout


def test_proc_environ_of_the_parent_and_pid_1_shows_no_secret(repo: Path) -> None:
    out = _from_a_process_holding_the_keys(repo, "workspace-write")
    assert out.count("== /proc/") == 2 and "end" in out and "PATH=" in out, out
    assert _leaks(out) == []
    # the same reading, unsandboxed, does find the keys: the check above can see a leak
    assert "ANTHROPIC_API_KEY" in _leaks(_from_a_process_holding_the_keys(repo, "off"))


@pytest.mark.usefixtures("secret_env")
def test_run_tests_runs_sandboxed_with_the_allowlisted_env(repo: Path) -> None:
    r = sh(repo, f"env; touch {Path.home()}/ctxagent-run-tests-{os.getpid()}; echo '1 passed, 0 failed'", tool="run_tests")
    assert r.content.startswith("tests: 1 passed, 0 failed") and r.meta["sandbox"] == "workspace-write"
    assert "Read-only file system" in r.content and _leaks(r.content) == []
    assert not (Path.home() / f"ctxagent-run-tests-{os.getpid()}").exists()


def test_user_additions_pass_unless_secret_shaped(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_HOST", "db.internal")
    monkeypatch.setenv("DEPLOY_TOKEN", "plain-looking-value")
    monkeypatch.setenv("NOT_ADDED", "stays-out")
    r = sh(repo, "env", SandboxPolicy(env=("DATABASE_HOST", "DEPLOY_TOKEN")))
    assert "DATABASE_HOST=db.internal" in r.content
    assert "DEPLOY_TOKEN" not in r.content and "stays-out" not in r.content


# --- off, and when bwrap cannot run -------------------------------------------------------------------


@pytest.mark.usefixtures("secret_env")
def test_off_runs_unsandboxed_with_the_allowlisted_env(repo: Path, tmp_path: Path) -> None:
    r = sh(repo, f"echo written > {tmp_path}/outside.txt; env", SandboxPolicy(mode="off"))
    assert (tmp_path / "outside.txt").read_text() == "written\n" and r.meta["sandbox"] == "off"
    assert "PATH=" in r.content and _leaks(r.content) == []


def _fake_bwrap(tmp_path: Path) -> str:
    fake = tmp_path / "fake-bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    return str(fake)


def _pass_through_bwrap(tmp_path: Path) -> str:
    """A "bwrap" that exits 0 and runs the command after `--` without any sandbox."""
    fake = tmp_path / "pass-through-bwrap"
    fake.write_text('#!/bin/bash\nwhile [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done; shift; exec "$@"\n')
    fake.chmod(0o755)
    return str(fake)


@pytest.mark.parametrize("which", ["fails", "missing", "pass-through"])
def test_an_unusable_bwrap_refuses_commands_naming_the_setting(repo: Path, tmp_path: Path, which: str) -> None:
    path = {"fails": _fake_bwrap, "pass-through": _pass_through_bwrap}.get(which, lambda p: str(p / "no-such-bwrap"))(tmp_path)
    marker = repo / "ran.txt"
    policy = SandboxPolicy(bwrap=path)
    for tool in ("shell", "run_tests"):
        r = sh(repo, f"touch {marker}", policy, tool=tool)
        assert r.is_error and not marker.exists(), r.content
        assert 'sandbox = "off"' in r.content and "--sandbox off" in r.content and path in r.content
        assert {"fails": "Permission denied", "missing": "no such file",
                "pass-through": "did not run the probe in a sandbox"}[which] in r.content
    with pytest.raises(SandboxUnavailableError):
        run_command(f"touch {marker}", repo, policy=policy)
    assert not marker.exists()


def test_doctor_checks_name_bwrap_its_version_and_the_probe(tmp_path: Path) -> None:
    checks = {title: (status, detail) for status, title, detail in sandbox_checks(SandboxPolicy())}
    assert checks["sandbox"][0] == "ok" and "workspace-write" in checks["sandbox"][1]
    status, detail = checks["bubblewrap"]
    assert status == "ok" and find_bwrap(SandboxPolicy()) in detail and "ran a probe command in a new PID namespace" in detail
    assert probe(find_bwrap(SandboxPolicy())).version in detail
    bad = {title: (status, detail) for status, title, detail in sandbox_checks(SandboxPolicy(bwrap=_fake_bwrap(tmp_path)))}
    assert bad["bubblewrap"][0] == "warn" and "--sandbox off" in bad["bubblewrap"][1]
    off = {title: status for status, title, _ in sandbox_checks(SandboxPolicy(mode="off"))}
    assert off["sandbox"] == "warn" and "bubblewrap" not in off
