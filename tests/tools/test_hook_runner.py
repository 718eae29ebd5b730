"""`run_hook`: a program from the user's config, JSON on stdin, a deadline, the sandbox, and no
exception whatever happens. Real bash, real bwrap, real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ctxagent.tools.sandbox import HookOutcome, SandboxPolicy, run_hook
from ctxagent.tools.sandbox.hooks import NOT_RUN, TIMED_OUT

OFF = SandboxPolicy(mode="off")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture
def outside(request: pytest.FixtureRequest) -> Iterator[Path]:
    """Outside the repository and outside /tmp (a sandboxed hook's /tmp is private)."""
    path = Path.home() / f".ctxagent-hook-test-{os.getpid()}-{request.node.name}".replace("/", "_")
    yield path
    path.unlink(missing_ok=True)


@pytest.mark.parametrize("policy", [SandboxPolicy(), OFF], ids=["sandboxed", "off"])
def test_json_on_stdin_and_the_streams_and_exit_code_apart(repo: Path, policy: SandboxPolicy, request) -> None:  # type: ignore[no-untyped-def]
    if policy.sandboxed:
        request.getfixturevalue("bwrap_path")
    payload = {"event": "pre_tool_use", "tool": "shell", "arguments": {"command": "rm -rf 目录"}, "n": [1, 2.5, None]}
    out = run_hook("cat; echo 错误 >&2; exit 2", payload, cwd=repo, policy=policy)
    assert isinstance(out, HookOutcome) and isinstance(out, tuple)
    code, stdout, stderr = out
    assert code == 2 and json.loads(stdout) == payload and "目录" in stdout and stderr == "错误\n"
    assert run_hook(["python3", "-c", "import json,sys; print(json.load(sys.stdin)['k'][::-1])"], {"k": "abc d"},
                    cwd=repo, policy=policy) == (0, "d cba\n", "")


@pytest.mark.usefixtures("bwrap_path")
def test_it_runs_sandboxed(repo: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0")
    code, stdout, stderr = run_hook(f"echo x > {outside}; echo y > in.txt; env; echo $(cat /proc/1/environ | tr '\\0' ' ')",
                                    {}, cwd=repo)
    assert code == 0 and "Read-only file system" in stderr and not outside.exists(), stderr
    assert (repo / "in.txt").read_text() == "y\n" and "PATH=" in stdout
    assert "sk-proj-" not in stdout and "OPENAI_API_KEY" not in stdout
    # the control: unsandboxed, the same write lands (so the check above can see a write)
    assert run_hook(f"echo x > {outside}", {}, cwd=repo, policy=OFF).exit_code == 0 and outside.exists()


def _failing_bwrap(tmp_path: Path) -> str:
    fake = tmp_path / "fake-bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    return str(fake)


def test_where_bwrap_cannot_run_it_is_not_run_and_says_the_setting(repo: Path, tmp_path: Path) -> None:
    marker = repo / "ran.txt"
    code, stdout, stderr = run_hook(f"touch {marker}", {}, cwd=repo, policy=SandboxPolicy(bwrap=_failing_bwrap(tmp_path)))
    assert (code, stdout) == (NOT_RUN, "") and not marker.exists()
    assert stderr.startswith("hook not run: command refused") and 'sandbox = "off"' in stderr and "--sandbox off" in stderr
    assert "Permission denied" in stderr


@pytest.mark.parametrize("policy", [SandboxPolicy(), OFF], ids=["sandboxed", "off"])
def test_a_hook_past_its_deadline_is_killed_with_what_it_left_running(
        repo: Path, procs_with: Callable[[str], list[int]], policy: SandboxPolicy, request) -> None:  # type: ignore[no-untyped-def]
    if policy.sandboxed:
        request.getfixturevalue("bwrap_path")
    marker = f"ctxagent-hook-sleeper-{os.getpid()}-{policy.mode}"
    started = time.monotonic()
    code, stdout, stderr = run_hook(f"echo started; (exec -a {marker} sleep 300) & exec -a {marker} sleep 300", {},
                                    cwd=repo, policy=policy, timeout=1)
    assert code == TIMED_OUT and stdout == "started\n" and "timed out after 1 s" in stderr
    assert time.monotonic() - started < 60  # well before the sleeps would end (not a speed check)
    assert _gone(marker, procs_with)


def _gone(marker: str, procs_with: Callable[[str], list[int]]) -> bool:
    """True once no live process carries `marker` (a SIGKILLed one may show for a moment)."""
    deadline = time.monotonic() + 10
    while procs_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    return procs_with(marker) == []


def test_background_children_holding_the_pipes_do_not_keep_it_waiting(
        repo: Path, procs_with: Callable[[str], list[int]]) -> None:
    marker = f"ctxagent-hook-background-{os.getpid()}"
    code, stdout, _ = run_hook(f"(exec -a {marker} sleep 300) & echo done", {}, cwd=repo, policy=OFF, timeout=120)
    assert code == 0 and stdout == "done\n"
    assert _gone(marker, procs_with)


@pytest.mark.parametrize(("command", "code"), [("kill -TERM $$", 128 + signal.SIGTERM), ("exit 7", 7),
                                               ("no-such-program-ctxagent", 127)])
def test_exit_codes_are_a_shells(repo: Path, command: str, code: int) -> None:
    assert run_hook(command, {}, cwd=repo, policy=OFF).exit_code == code


def test_large_input_and_output_are_bounded_and_never_raise(repo: Path) -> None:
    big = "字" * 3_000_000  # 9 MB of UTF-8, to a hook that never reads it
    assert run_hook("exit 0", {"text": big}, cwd=repo, policy=OFF) == (0, "", "")
    code, stdout, stderr = run_hook("head -c 5000000 /dev/zero | tr '\\0' a; head -c 300 /dev/zero | tr '\\0' b >&2", {},
                                    cwd=repo, policy=OFF, output_bytes=1000)
    assert code == 0 and stdout.startswith("a" * 1000) and "4,999,000 more bytes not kept" in stdout
    assert stderr == "b" * 300


@pytest.mark.parametrize("bad", [
    {"command": "", "payload": {}},
    {"command": "echo \x00 x", "payload": {}},
    {"command": [], "payload": {}},
    {"command": 42, "payload": {}},
    {"command": "cat", "payload": {"s": "lone \udc80 surrogate", "when": object()}},
    {"command": "cat", "payload": {}, "timeout": "soon"},
    {"command": "cat", "payload": {}, "cwd": Path("/no/such/directory")},
])
def test_bad_input_is_an_outcome_never_an_exception(repo: Path, bad: dict) -> None:
    kwargs = {"cwd": repo, "policy": OFF, **bad}
    out = run_hook(kwargs.pop("command"), kwargs.pop("payload"), **kwargs)
    assert isinstance(out.exit_code, int) and isinstance(out.stdout, str) and isinstance(out.stderr, str)
    if bad["command"] == "cat" and "s" in bad["payload"]:
        assert out.exit_code == 0 and json.loads(out.stdout)["s"] == "lone \udc80 surrogate"  # escaped, not lost
    else:
        assert out.exit_code == NOT_RUN and out.stderr.startswith("hook "), out
