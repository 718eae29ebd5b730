"""The command sandbox through the real CLI (issue 19): `ctxagent -p` against the loopback model
server, real bwrap, real files and sockets; `ctxagent config` and `ctxagent doctor` as the user reads them.

What each test checks is what the model saw (the tool result in the next request the server got)
and what happened on the host (the file, the listening socket). Where bwrap cannot run, ctxagent
itself is started inside a user namespace that forbids nested ones (`bwrap --disable-userns`): the
machine condition the refusal is for, not a stand-in for it.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from attack_helpers import headless, no_traceback, repo_config, run_cli, user_config
from ctxagent.context.errors import SandboxUnavailableError
from ctxagent.tools.sandbox import DEFAULT_POLICY, find_bwrap


@pytest.fixture
def bwrap() -> str:
    try:
        return find_bwrap(DEFAULT_POLICY)
    except SandboxUnavailableError as exc:
        pytest.skip(f"bubblewrap cannot run on this machine: {exc}")


@pytest.fixture
def outside(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A file outside the repository and outside /tmp (a sandboxed command's /tmp is private): in $HOME."""
    path = Path.home() / f".ctxagent-cli-test-{os.getpid()}-{request.node.name}".replace("/", "_")
    yield path
    path.unlink(missing_ok=True)


@pytest.fixture
def listener() -> Iterator[tuple[int, threading.Event]]:
    """A port on the host's loopback, and an event set when something connects to it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)
    reached, stop = threading.Event(), threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            reached.set()
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], reached
    stop.set()
    thread.join(2)
    server.close()


def _shell(command: str) -> list[dict]:
    return [{"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}, {"text": "done"}]


def _tool_result(srv) -> str:  # type: ignore[no-untyped-def]
    """What the model was shown of the one tool call: the tool message of the request after it."""
    [msg] = [m for m in srv.requests[-1]["body"]["messages"] if m["role"] == "tool"]
    return str(msg["content"])


def _write_and_connect(outside: Path, port: int) -> str:
    connect = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('CONNECTED')\""
    return f"echo 写入 > {outside}; {connect} 2>&1 | tail -1; echo end"


@pytest.mark.usefixtures("bwrap")
def test_p_runs_a_shell_call_sandboxed_and_unsandboxed_with_the_flag(repo: Path, servers, outside: Path) -> None:
    srv = servers(_shell(f"echo 写入 > {outside}; echo inside > in.txt; echo end"))
    out = headless(repo, srv.base_url, "go", "--yes")
    no_traceback(out)
    seen = _tool_result(srv)
    assert out.returncode == 0 and "end" in seen, out.stderr
    assert "Read-only file system" in seen and not outside.exists(), seen
    assert (repo / "in.txt").read_text() == "inside\n"  # the repository itself is writable
    srv = servers(_shell(f"echo 写入 > {outside}; echo end"))
    out = headless(repo, srv.base_url, "go", "--yes", "--sandbox", "off")
    assert out.returncode == 0, out.stderr
    assert "Read-only file system" not in _tool_result(srv) and outside.read_text() == "写入\n"


@pytest.mark.usefixtures("bwrap")
@pytest.mark.parametrize("trusted", [False, True])
def test_a_repository_config_cannot_turn_the_sandbox_off_or_open_the_network(
        repo: Path, servers, outside: Path, listener: tuple[int, threading.Event], _isolated_home: Path,
        trusted: bool) -> None:
    port, reached = listener
    repo_config(repo, f'sandbox = "off"\nsandbox_network = true\nsandbox_writable = ["{outside.parent}"]\n')
    if trusted:
        assert run_cli(repo, "trust").returncode == 0
    srv = servers(_shell(_write_and_connect(outside, port)))
    out = headless(repo, srv.base_url, "go", "--yes")
    no_traceback(out)
    seen = _tool_result(srv)
    assert out.returncode == 0 and "end" in seen, out.stderr
    assert not outside.exists() and "CONNECTED" not in seen and not reached.wait(0.5), seen
    assert "no repository may set, trusted or not" in out.stderr and "--sandbox off" in out.stderr
    assert "ctxagent trust" not in out.stderr  # trusting would not change it: not offered
    # the same command with the user's own config: the file is written and the port reached
    user_config(_isolated_home, 'sandbox = "off"\n')
    srv = servers(_shell(_write_and_connect(outside, port)))
    out = headless(repo, srv.base_url, "go", "--yes")
    assert out.returncode == 0 and outside.read_text() == "写入\n" and "CONNECTED" in _tool_result(srv), out.stderr
    assert reached.wait(5)


@pytest.mark.usefixtures("bwrap")
def test_the_network_flag_opens_only_the_network(repo: Path, servers, outside: Path,
                                                 listener: tuple[int, threading.Event]) -> None:
    port, reached = listener
    srv = servers(_shell(_write_and_connect(outside, port)))
    out = headless(repo, srv.base_url, "go", "--yes", "--sandbox-network")
    seen = _tool_result(srv)
    assert out.returncode == 0 and "CONNECTED" in seen and reached.wait(5), seen
    assert not outside.exists() and "Read-only file system" in seen


def test_config_shows_the_effective_sandbox_and_where_it_came_from(repo: Path, _isolated_home: Path) -> None:
    shown = run_cli(repo, "config")
    sandbox = json.loads(shown.stdout)["effective_sandbox"]
    assert shown.returncode == 0 and (sandbox["mode"], sandbox["network"]) == ("workspace-write", False)
    assert sandbox["from"]["sandbox"] == "the default" and "~/.ssh" in sandbox["hidden"]
    user_config(_isolated_home, 'sandbox_network = true\nsandbox_env = ["DATABASE_HOST"]\n')
    repo_file = repo_config(repo, 'sandbox = "read-only"\nsandbox_network = true\n')
    shown = run_cli(repo, "config")
    cfg = json.loads(shown.stdout)
    sandbox = cfg["effective_sandbox"]
    user_file = str(_isolated_home / "config" / "config.toml")
    assert (sandbox["mode"], sandbox["network"], sandbox["env"]) == ("read-only", True, ["DATABASE_HOST"])
    assert sandbox["from"] == {"sandbox": str(repo_file), "sandbox_network": user_file, "sandbox_env": user_file,
                               "sandbox_writable": "the default", "sandbox_hidden": "the default",
                               "sandbox_unix_sockets": "the default"}
    assert sandbox["description"].startswith("read-only (nothing writable but a private /tmp; network allowed")
    assert [(i["key"], i["user_only"]) for i in cfg["ignored_keys"]] == [("sandbox_network", True)]
    assert "no repository may set" in shown.stderr  # the repository's network = true, dropped and said
    flagged = json.loads(run_cli(repo, "--sandbox", "off", "config").stdout)["effective_sandbox"]
    assert (flagged["mode"], flagged["from"]["sandbox"]) == ("off", "flags")
    assert flagged["description"].startswith("off (commands run unsandboxed")


def _doctor(cwd: Path, *args: str, prefix: list[str] | None = None) -> dict[str, tuple[str, str]]:
    out = run_cli(cwd, *args, "doctor", prefix=prefix)
    no_traceback(out)
    lines = [line for line in out.stdout.splitlines() if line.startswith("[")]
    checks = {}
    for line in lines:
        status, rest = line[1:].split("]", 1)
        title, detail = rest.strip().split(": ", 1)
        checks[title] = (status.strip(), detail)
    return checks


def test_doctor_says_whether_commands_run_sandboxed_here(repo: Path, bwrap: str, _isolated_home: Path) -> None:
    checks = _doctor(repo)
    assert checks["sandbox"] == ("ok", "commands run sandboxed: workspace-write (the repository writable except "
                                       "every .git, .ctxagent/ and what git or ctxagent would run from it; no network) "
                                       "(from the default)")
    assert checks["bubblewrap"][0] == "ok" and checks["bubblewrap"][1].startswith(bwrap), checks["bubblewrap"]
    assert "ran a probe command in a new PID namespace" in checks["bubblewrap"][1]
    assert checks["command environment"][0] == "ok"
    off = _doctor(repo, "--sandbox", "off")
    assert off["sandbox"][0] == "warn" and off["sandbox"][1].startswith("off (from --sandbox): commands run without")
    user_config(_isolated_home, 'sandbox = "read-only"\n')
    mine = _doctor(repo)["sandbox"]
    assert mine[0] == "ok" and mine[1].endswith(f"(from {_isolated_home / 'config' / 'config.toml'})"), mine


# --- where bwrap cannot run: ctxagent started where no new user namespace may be made ----------------


def _no_user_namespaces(bwrap: str) -> list[str]:
    return [bwrap, "--dev-bind", "/", "/", "--unshare-user", "--disable-userns", "--die-with-parent", "--"]


def test_where_bwrap_cannot_run_commands_are_refused_naming_the_setting(repo: Path, servers, bwrap: str,
                                                                        outside: Path) -> None:
    prefix = _no_user_namespaces(bwrap)
    srv = servers(_shell(f"echo 写入 > {outside}; echo inside > in.txt"))
    out = headless(repo, srv.base_url, "go", "--yes", prefix=prefix)
    no_traceback(out)
    seen = _tool_result(srv)
    assert out.returncode == 0, out.stderr  # a refused command is a tool error, not the run's end
    assert "command refused: the sandbox (bubblewrap) cannot run here" in seen, seen
    assert 'sandbox = "off"' in seen and "--sandbox off" in seen
    assert not outside.exists() and not (repo / "in.txt").exists()
    checks = _doctor(repo, prefix=prefix)
    assert checks["sandbox"][0] == "warn" and checks["sandbox"][1].startswith(
        "commands are refused: workspace-write (from the default) needs bubblewrap, which cannot run here"), checks
    assert '--sandbox off' in checks["sandbox"][1] and 'sandbox = "off"' in checks["sandbox"][1]
    assert checks["bubblewrap"][0] == "warn" and bwrap in checks["bubblewrap"][1]
    # the way out it names does work there
    srv = servers(_shell("echo inside > in.txt"))
    out = headless(repo, srv.base_url, "go", "--yes", "--sandbox", "off", prefix=prefix)
    assert out.returncode == 0 and (repo / "in.txt").read_text() == "inside\n", out.stderr
    assert _doctor(repo, "--sandbox", "off", prefix=prefix)["sandbox"][0] == "warn"  # off is always said
