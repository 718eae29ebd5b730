"""The run_tests tool: find the project's test command, run it, and put the counts first.

The command is, in order: the `command` argument, `ctx.config["test_command"]`, or one detected
from the repository (pytest, npm test, go test, cargo test). It runs through the shell tool's
runner (process group, timeout, head + tail output) and so under its sandbox policy
(`ctx.config["sandbox"]`, tools/sandbox/). The first line of the result is a summary such
as "tests: 3 passed, 1 failed (exit 1)", parsed from what the runner printed (tools/test_output.py:
pytest, unittest, go test, cargo test, jest, vitest, ExUnit, mocha, node's test runner). Whether the
run passed is decided from those counts and the exit code by context/test_runs.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ctxagent.context.errors import ToolError
from ctxagent.context.floor import bounded_json
from ctxagent.context.floor.beneath import read_small
from ctxagent.context.test_runs import counts_text
from ctxagent.tools.confine import repo_root
from ctxagent.tools.contract import FunctionTool, ToolArgs, ToolContext, ToolResult
from ctxagent.tools.sandbox.policy import policy_of
from ctxagent.tools.shell import describe_outcome, output_limit, resolve_timeout, run_command
from ctxagent.tools.test_output import TestCounter
from pydantic import Field

DEFAULT_TIMEOUT = 600.0
_NPM_PLACEHOLDER = "no test specified"


# --- detection ----------------------------------------------------------------------------------


_CONFIG_READ_LIMIT = 1 << 20  # a project file bigger than this is not a config file to sniff (then: not detected)


def _project_text(root: Path, name: str) -> str | None:
    """The text of the repository's own `name` at its root, or None. Read through the confined walk: the
    repository is untrusted, and a FIFO, a device or a link out of it in place of `pyproject.toml` must not
    hang or redirect the detection."""
    try:
        return read_small(root, name, _CONFIG_READ_LIMIT).decode("utf-8", "replace")
    except (OSError, ToolError):
        return None


def _has_pytest_config(root: Path) -> bool:
    checks = [("pyproject.toml", "[tool.pytest"), ("setup.cfg", "[tool:pytest]"), ("tox.ini", "[pytest]")]
    for name, marker in checks:
        text = _project_text(root, name)
        if text is not None and marker in text:
            return True
    if (root / "pytest.ini").is_file() or (root / "conftest.py").is_file():
        return True
    for d in ("tests", "test"):
        if (root / d).is_dir() and any((root / d).rglob("test_*.py")):
            return True
    return any(root.glob("test_*.py"))


def _pytest_command(root: Path) -> str:
    for venv in (".venv", "venv", "env"):
        py = root / venv / "bin" / "python"
        if py.exists():
            return f"{venv}/bin/python -m pytest"
    if shutil.which("pytest"):
        return "pytest"
    return "python3 -m pytest"


def detect_test_command(root: Path) -> str | None:
    """The conventional test command for the project at `root`, or None if nothing is recognised."""
    if _has_pytest_config(root):
        return _pytest_command(root)
    pkg = _project_text(root, "package.json")
    if pkg is not None:
        try:
            script = (bounded_json.loads(pkg).get("scripts") or {}).get("test")
        except (ValueError, AttributeError):  # TooDeepError is a ValueError
            script = None
        if isinstance(script, str) and script.strip() and _NPM_PLACEHOLDER not in script:
            return "npm test"
    if (root / "go.mod").is_file():
        return "go test ./..."
    if (root / "Cargo.toml").is_file():
        return "cargo test"
    if (root / "pyproject.toml").is_file() or (root / "setup.py").is_file():
        return None  # a Python project without tests: say so rather than guess
    return None


# --- the first line ----------------------------------------------------------------------------


def summary_line(counts: dict[str, int], found: bool, exit_code: int | None, status: str) -> str:
    """"tests: 3 passed, 1 failed (exit 1)": the counts in the words the app and memory use too."""
    if exit_code is None:
        return f"tests: {status}"
    return f"tests: {counts_text(counts, found, exit_code)}"


# --- the tool -----------------------------------------------------------------------------------


class RunTestsArgs(ToolArgs):
    command: str | None = Field(None, description="test command to run instead of the detected one, "
                               "e.g. 'pytest tests/test_api.py -x'")


def run_tests(args: RunTestsArgs, ctx: ToolContext) -> ToolResult:
    root = repo_root(ctx.root)
    command = (args.command or "").strip() or str(ctx.config.get("test_command") or "").strip()
    if not command:
        command = detect_test_command(root) or ""
    if not command:
        raise ToolError("could not detect how to run the tests here (no pytest config or tests/, package.json test "
                        "script, go.mod or Cargo.toml); pass command=..., or set test_command in .ctxagent/config.toml")
    timeout, note = resolve_timeout(ctx.config.get("test_timeout"), DEFAULT_TIMEOUT)
    counter = TestCounter()
    policy = policy_of(ctx.config)
    out = run_command(command, root, timeout=timeout, cancel=ctx.cancel, output_bytes=output_limit(ctx),
                      on_chunk=counter.feed, policy=policy)
    counts = counter.finish()
    status = describe_outcome(out, timeout)
    head = summary_line(counts, counter.found, out.exit_code, status)
    if out.exit_code == 127:
        head += " — the test command was not found; pass command=... to run_tests"
    body = out.output if out.output.strip() else "(no output)"
    meta = {"tests": counts, "exit_code": out.exit_code, "command": command, "timed_out": out.timed_out,
            "counts_found": counter.found, "duration_s": round(out.duration, 3), "sandbox": policy.mode}
    failed_to_run = out.timed_out or out.cancelled or out.runaway or out.exit_code in (126, 127)
    return ToolResult(f"{head}\n{note}$ {command}\n{body}", is_error=failed_to_run, meta=meta)


def run_tests_tools() -> list[FunctionTool[Any]]:
    return [
        FunctionTool("run_tests", (
            "Run the project's tests (detected: pytest, npm test, go test ./..., cargo test; or the configured "
            "test_command; or the given command). The first line is a summary like 'tests: 3 passed, 1 failed (exit 1)'."),
            RunTestsArgs, "command", run_tests),
    ]
