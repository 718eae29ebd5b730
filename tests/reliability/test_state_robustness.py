"""ctxagent's own state under hostile or broken conditions (issue 10 medium, issues 12 and 13), through
the real CLI: a garbage memory.db, a read-only `.ctxagent/`, a full disk, memory off, bad config values.
A clear message (or a run without memory that says so), never a traceback."""

from __future__ import annotations

import json
import os
import resource
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from attack_helpers import git, headless, no_traceback, repo_config, run_cli, user_config
from ctxagent.context.floor.state_paths import ensure_state_dir
from ctxagent.context.history import SessionLog

STORE_TOOLS = {"search_memory", "store_memory"}


def _tool_names(srv) -> set[str]:  # noqa: ANN001
    return {t.get("function", t).get("name") for t in srv.requests[0]["body"].get("tools") or []}


def test_garbage_memory_db_runs_without_memory_and_says_so(repo: Path, servers) -> None:
    ensure_state_dir(repo)  # ctxagent's own folder, whose database was damaged (a disk error, a crash)
    (repo / ".ctxagent" / "memory.db").write_bytes(b"this is not sqlite\x00" * 512)
    srv = servers([{"text": "still working"}])
    out = headless(repo, srv.base_url, "hi")
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    assert "running without memory" in out.stderr and "not a database" in out.stderr
    assert "still working" in out.stdout
    assert not (_tool_names(srv) & STORE_TOOLS)  # no memory tool that would fail on every call
    for sub in (["memory", "list"], ["memory", "search", "x"], ["memory", "stats"]):
        other = run_cli(repo, *sub)
        no_traceback(other)
        assert other.returncode == 2 and "not a database" in other.stderr, (sub, other.stderr)
    assert (repo / ".ctxagent" / "memory.db").read_bytes().startswith(b"this is not sqlite")  # nothing lost


def _readonly_prefix(path: Path) -> list[str] | None:
    """A command prefix that runs the CLI with `path` mounted read-only (root ignores file modes)."""
    if os.geteuid() != 0:
        return None
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
    prefix = ["unshare", "-m", "sh", "-c", script, "sh", str(path)]
    if shutil.which("unshare") is None or subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("running as root without mount namespaces: cannot make a folder read-only")
    return prefix


def _run_readonly(path: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    prefix = _readonly_prefix(path)
    if prefix is not None:
        return run_cli(cwd, *args, prefix=prefix)
    modes = {p: p.stat().st_mode for p in [path, *path.rglob("*")]}
    for p in modes:
        p.chmod(stat.S_IMODE(modes[p]) & ~0o222)
    try:
        return run_cli(cwd, *args)
    finally:
        for p, mode in modes.items():
            p.chmod(stat.S_IMODE(mode))


def test_read_only_state_dir_is_a_clear_error(repo: Path, servers) -> None:
    run_cli(repo, "memory", "stats")  # an existing state folder, as ctxagent made it
    (repo / ".ctxagent" / "sessions").mkdir()
    srv = servers([{"text": "hi"}])
    out = _run_readonly(repo / ".ctxagent", repo, "-p", "hi", "--model", "openai:gpt-5.4-mini", "--base-url", srv.base_url)
    no_traceback(out)
    assert out.returncode == 2, out.stderr
    assert "cannot write the session log" in out.stderr and ("read-only" in out.stderr or "permission denied" in out.stderr)


def test_read_only_repository_is_a_clear_error(repo: Path, servers) -> None:
    srv = servers([{"text": "hi"}])
    out = _run_readonly(repo, repo, "-p", "hi", "--model", "openai:gpt-5.4-mini", "--base-url", srv.base_url)
    no_traceback(out)
    assert out.returncode == 2, out.stderr
    assert "cannot create ctxagent's state folder" in out.stderr
    stats = _run_readonly(repo, repo, "memory", "stats")
    no_traceback(stats)
    assert stats.returncode == 2 and "cannot create ctxagent's state folder" in stats.stderr


def _limit_file_size() -> None:
    # Every file write past 256 KiB fails (EFBIG), as on a full disk; Python ignores SIGXFSZ.
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))


def test_disk_full_mid_turn_is_a_clear_error_and_the_log_survives(repo: Path, servers) -> None:
    srv = servers([
        {"text": "First a small step.", "tool_calls": [{"name": "read_file", "arguments": {"path": "app.py"}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "seq 1 120000"}}]},  # ~700 KB: spilled
        {"text": "done"},
    ])
    out = headless(repo, srv.base_url, "read and run", "--yes", preexec_fn=_limit_file_size)
    no_traceback(out)
    assert out.returncode == 1, out.stderr
    assert "cannot write" in out.stderr and ("file too large" in out.stderr or "disk full" in out.stderr)
    logs = list((repo / ".ctxagent" / "sessions").glob("*.jsonl"))
    assert len(logs) == 1
    log = SessionLog.load(logs[0])
    assert [e.kind for e in log.events][0] == "session_start" and log.of_kind("user")
    assert any(e.kind == "tool_result" and e.data.get("name") == "read_file" for e in log.events)
    assert not list((repo / ".ctxagent" / "spill").glob(".tmp-*"))  # no half-written spill file left


def test_memory_db_and_state_dir_are_private(repo: Path, servers) -> None:
    srv = servers([{"text": "ok"}])
    out = headless(repo, srv.base_url, "We decided to use PostgreSQL.")
    assert out.returncode == 0, out.stderr
    state = repo / ".ctxagent"
    assert stat.S_IMODE((state / "memory.db").stat().st_mode) == 0o600
    assert stat.S_IMODE(state.stat().st_mode) & 0o077 == 0
    for side in state.glob("memory.db-*"):
        assert stat.S_IMODE(side.stat().st_mode) == 0o600, side


def test_memory_off_registers_no_memory_tool_and_writes_no_db(repo: Path, servers, _isolated_home: Path) -> None:
    user_config(_isolated_home, "memory = false\n")
    srv = servers([{"tool_calls": [{"name": "store_memory", "arguments": {"content": "x", "type": "note"}}]}, {"text": "ok"}])
    out = headless(repo, srv.base_url, "Remember: never use MySQL.", "--yes")
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    assert not (_tool_names(srv) & STORE_TOOLS)
    assert "search_memory" not in json.dumps(srv.requests[0]["body"]["messages"][0])
    assert not (repo / ".ctxagent" / "memory.db").exists()
    assert not (_isolated_home / "memory.db").exists()


def test_memory_stats_in_a_fresh_repository_keeps_git_status_clean(repo: Path) -> None:
    out = run_cli(repo, "memory", "stats")
    assert out.returncode == 0, out.stderr
    assert (repo / ".ctxagent" / ".gitignore").exists()
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize(("text", "key"), [
    ('max_steps = "ten"\n', "max_steps"),
    ('budget = { hot = "x" }\n', "budget.hot"),
    ('memory = "no"\n', "memory"),
    ("spill_tokens = -5\n", "spill_tokens"),
])
def test_bad_config_values_name_the_file_and_the_key(repo: Path, text: str, key: str) -> None:
    path = repo_config(repo, text)
    out = run_cli(repo, "-p", "hi", "--model", "openai:gpt-5.4-mini", "--base-url", "http://127.0.0.1:9")
    no_traceback(out)
    assert out.returncode == 2
    assert str(path) in out.stderr and f"{key}:" in out.stderr, out.stderr
