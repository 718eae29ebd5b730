"""The run_tests tool: find the project's test command, run it, and put the counts first.

The command is, in order: the `command` argument, `ctx.config["test_command"]`, or one detected
from the repository (pytest, npm test, go test, cargo test). It runs through the shell tool's
runner (process group, timeout, head + tail output) and so under its sandbox policy
(`ctx.config["sandbox"]`, tools/sandbox/). The first line of the result is a summary such
as "tests: 3 passed, 1 failed (exit 1)", parsed from what pytest, go, cargo, jest, vitest, mocha,
node's test runner or a plain "N passed, N failed" line printed.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from ctxagent.context.errors import ToolError
from ctxagent.tools.confine import repo_root
from ctxagent.tools.contract import FunctionTool, ToolArgs, ToolContext, ToolResult
from ctxagent.tools.sandbox.policy import policy_of
from ctxagent.tools.shell import describe_outcome, output_limit, resolve_timeout, run_command
from pydantic import Field

DEFAULT_TIMEOUT = 600.0
_NPM_PLACEHOLDER = "no test specified"


# --- detection ----------------------------------------------------------------------------------


def _has_pytest_config(root: Path) -> bool:
    checks = [("pyproject.toml", "[tool.pytest"), ("setup.cfg", "[tool:pytest]"), ("tox.ini", "[pytest]")]
    for name, marker in checks:
        f = root / name
        if f.is_file() and marker in f.read_text("utf-8", "replace"):
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
    pkg = root / "package.json"
    if pkg.is_file():
        try:
            script = (json.loads(pkg.read_text("utf-8")).get("scripts") or {}).get("test")
        except (ValueError, AttributeError):
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


# --- counting -----------------------------------------------------------------------------------

_PYTEST_SUMMARY = re.compile(r"^=*\s*(?:\d+ \w+(?:, )?)+.* in [\d.]+s")
_PYTEST_ITEM = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")
_CARGO = re.compile(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")
_JEST = re.compile(r"^Tests:\s+(.*\d+ total)")
_VITEST = re.compile(r"^\s*Tests\s+(.*)\(\d+\)\s*$")
_NODE = re.compile(r"^(?:#|ℹ)\s*(pass|fail|skipped|todo|cancelled)\s+(\d+)\s*$")
_MOCHA = re.compile(r"^\s+(\d+) (passing|failing|pending)\b")
_PLAIN = re.compile(r"^(?:\w+:\s*)?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?\s*$")
_GO = re.compile(r"^\s*--- (PASS|FAIL|SKIP):")
_GO_PKG = re.compile(r"^(ok|FAIL|---)\s+\S+\s")


class TestCounter:
    """Fed the output line by line as it streams (so counts survive the middle being cut)."""

    __test__ = False  # not a pytest class

    def __init__(self) -> None:
        self.counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
        self.found = False
        self._pending = b""
        self._go = {"PASS": 0, "FAIL": 0, "SKIP": 0}
        self._go_pkgs = {"ok": 0, "FAIL": 0}
        self._summary: dict[str, int] | None = None  # the last whole-run summary line wins
        self._sums = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
        self._summed = False

    def feed(self, chunk: bytes) -> None:
        data = self._pending + chunk
        *lines, self._pending = data.split(b"\n")
        if len(self._pending) > 65536:  # one giant line: nothing countable in it
            self._pending = b""
        for raw in lines:
            self.line(raw.decode("utf-8", "replace").rstrip("\r"))

    def line(self, line: str) -> None:
        if m := _CARGO.search(line):
            self._add(passed=int(m[1]), failed=int(m[2]), skipped=int(m[3]))
        elif m := _GO.match(line):
            self._go[m[1]] += 1
        elif (m := _GO_PKG.match(line)) and m[1] in self._go_pkgs and "\t" in line:
            self._go_pkgs[m[1]] += 1
        elif m := _JEST.match(line):
            self._summary = self._items(m[1], {"failed": "failed", "passed": "passed", "skipped": "skipped", "todo": "skipped"})
        elif (m := _VITEST.match(line)) and "Test Files" not in line:
            self._summary = self._items(m[1], {"failed": "failed", "passed": "passed", "skipped": "skipped", "todo": "skipped"})
        elif m := _NODE.match(line):
            key = {"pass": "passed", "fail": "failed", "skipped": "skipped", "todo": "skipped", "cancelled": "errors"}[m[1]]
            self._summary = {**(self._summary or {}), key: (self._summary or {}).get(key, 0) + int(m[2])}
        elif m := _MOCHA.match(line):
            key = {"passing": "passed", "failing": "failed", "pending": "skipped"}[m[2]]
            self._summary = {**(self._summary or {}), key: int(m[1])}
        elif m := _PLAIN.match(line):
            self._summary = {"passed": int(m[1]), "failed": int(m[2]), "skipped": int(m[3] or 0)}
        elif _PYTEST_SUMMARY.match(line.strip()) or re.match(r"^=*\s*no tests ran", line.strip()):
            found = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
            for n, word in _PYTEST_ITEM.findall(line):
                key = {"error": "errors", "errors": "errors", "xfailed": "skipped", "xpassed": "passed"}.get(word, word)
                found[key] += int(n)
            self._summary = found

    @staticmethod
    def _items(text: str, names: dict[str, str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for n, word in re.findall(r"(\d+) (\w+)", text):
            if word in names:
                out[names[word]] = out.get(names[word], 0) + int(n)
        return out

    def _add(self, **kw: int) -> None:
        self._summed = True
        for k, v in kw.items():
            self._sums[k] += v

    def finish(self) -> dict[str, int]:
        if self._pending:
            self.line(self._pending.decode("utf-8", "replace"))
            self._pending = b""
        counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
        if self._summed:
            counts.update(self._sums)
        elif self._summary is not None:
            counts.update(self._summary)
        elif any(self._go.values()):
            counts.update(passed=self._go["PASS"], failed=self._go["FAIL"], skipped=self._go["SKIP"])
        elif any(self._go_pkgs.values()):  # `go test` without -v names packages only
            counts.update(passed=self._go_pkgs["ok"], failed=self._go_pkgs["FAIL"])
        else:
            self.found = False
            return counts
        self.found = True
        self.counts = counts
        return counts


def summary_line(counts: dict[str, int], found: bool, exit_code: int | None, status: str) -> str:
    if exit_code is None:
        return f"tests: {status}"
    if not found:
        return f"tests: no pass/fail counts found in the output (exit {exit_code})"
    parts = [f"{counts['passed']} passed", f"{counts['failed']} failed"]
    parts += [f"{counts[k]} {'error' if k == 'errors' and counts[k] == 1 else k}" for k in ("errors", "skipped") if counts[k]]
    return f"tests: {', '.join(parts)} (exit {exit_code})"


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
