"""run_tests: detection, a real pytest run in a tiny project, and the summary parsers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext, ToolResult
from ctxagent.tools.test_output import TestCounter
from ctxagent.tools.tests_runner import detect_test_command, summary_line

REG = make_registry()


def run(root: Path, config: dict | None = None, **args: object) -> ToolResult:
    return REG.run("run_tests", args, ToolContext(root=root, config=config or {}))


@pytest.fixture()
def pyproject(tmp_path: Path) -> Path:
    """A tiny pytest project whose .venv/bin/python is this interpreter (so pytest is importable)."""
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "python").symlink_to(sys.executable)
    (root / "pyproject.toml").write_text("[project]\nname = 'tiny'\nversion = '0'\n")
    (root / "tests" / "test_tiny.py").write_text(
        "def test_ok():\n    assert 1 + 1 == 2\n\n"
        "def test_bad():\n    assert '中文' == 'english', 'mismatch 不同'\n"
    )
    return root


def test_real_pytest_project_counts(pyproject: Path) -> None:
    assert detect_test_command(pyproject) == ".venv/bin/python -m pytest"
    r = run(pyproject)
    first = r.content.split("\n")[0]
    assert first == "tests: 1 passed, 1 failed (exit 1)", r.content[-2000:]
    assert r.meta["tests"] == {"passed": 1, "failed": 1, "errors": 0, "skipped": 0}
    assert r.meta["exit_code"] == 1 and r.meta["command"] == ".venv/bin/python -m pytest"
    assert "mismatch 不同" in r.content and not r.is_error


def test_given_and_configured_command(pyproject: Path) -> None:
    r = run(pyproject, command=".venv/bin/python -m pytest -q tests/test_tiny.py::test_ok")
    assert r.content.startswith("tests: 1 passed, 0 failed (exit 0)")
    r = run(pyproject, config={"test_command": "echo '7 passed, 2 failed'; exit 1"})
    assert r.content.startswith("tests: 7 passed, 2 failed (exit 1)")
    assert r.meta["command"] == "echo '7 passed, 2 failed'; exit 1"


def test_timeout_and_missing_command(tmp_path: Path) -> None:
    r = run(tmp_path, config={"test_timeout": 1}, command="sleep 1000")
    assert r.is_error and r.meta["timed_out"] and r.content.startswith("tests: timed out after 1 s")
    r = run(tmp_path, command="no-such-test-runner-xyz")
    assert r.is_error and r.meta["exit_code"] == 127 and "not found" in r.content.split("\n")[0]
    r = run(tmp_path)
    assert r.is_error and "could not detect" in r.content and "test_command" in r.content


def test_detection(tmp_path: Path) -> None:
    def fresh(name: str) -> Path:
        d = tmp_path / name
        d.mkdir()
        return d

    d = fresh("npm")
    (d / "package.json").write_text(json.dumps({"scripts": {"test": "jest"}}))
    assert detect_test_command(d) == "npm test"
    d = fresh("npm-placeholder")
    (d / "package.json").write_text(json.dumps({"scripts": {"test": 'echo "Error: no test specified" && exit 1'}}))
    assert detect_test_command(d) is None
    d = fresh("go")
    (d / "go.mod").write_text("module x\n")
    assert detect_test_command(d) == "go test ./..."
    d = fresh("rust")
    (d / "Cargo.toml").write_text("[package]\n")
    assert detect_test_command(d) == "cargo test"
    d = fresh("pyini")
    (d / "pytest.ini").write_text("[pytest]\n")
    assert detect_test_command(d) in ("pytest", "python3 -m pytest")
    d = fresh("pycfg")
    (d / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    assert detect_test_command(d) in ("pytest", "python3 -m pytest")


def count(text: str) -> tuple[dict[str, int], bool]:
    c = TestCounter()
    data = text.encode()
    for i in range(0, len(data), 7):  # odd chunk sizes: lines arrive split
        c.feed(data[i:i + 7])
    return c.finish(), c.found


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("..F\n=== 1 failed, 2 passed, 1 skipped, 2 warnings in 0.12s ===\n", (2, 1, 0, 1)),
        ("2 passed, 1 error in 0.3s\n", (2, 0, 1, 0)),
        ("=== no tests ran in 0.01s ===\n", (0, 0, 0, 0)),
        ("test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured\n"
         "test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured\n", (4, 2, 0, 1)),
        ("=== RUN   TestA\n--- PASS: TestA (0.00s)\n--- FAIL: TestB (0.00s)\n--- SKIP: TestC\nFAIL\n", (1, 1, 0, 1)),
        ("ok  \tgithub.com/x/a\t0.01s\nFAIL\tgithub.com/x/b\t0.02s\nok  \tgithub.com/x/c\t(cached)\n", (2, 1, 0, 0)),
        ("Tests:       1 failed, 2 skipped, 5 passed, 8 total\n", (5, 1, 0, 2)),
        (" Test Files  1 failed | 2 passed (3)\n      Tests  2 failed | 10 passed | 1 skipped (13)\n", (10, 2, 0, 1)),
        ("# tests 4\n# pass 3\n# fail 1\n# skipped 0\n", (3, 1, 0, 0)),
        ("ℹ tests 4\nℹ pass 4\nℹ fail 0\n", (4, 0, 0, 0)),
        ("  12 passing (30ms)\n  1 failing\n  2 pending\n", (12, 1, 0, 2)),
        ("summary: 9 passed, 0 failed, 3 skipped\n", (9, 0, 0, 3)),
    ],
)
def test_summary_parsers(output: str, expected: tuple[int, int, int, int]) -> None:
    counts, found = count(output)
    assert found
    assert (counts["passed"], counts["failed"], counts["errors"], counts["skipped"]) == expected


def test_unparseable_output_says_so() -> None:
    counts, found = count("compiling...\nsomething happened\n")
    assert not found
    assert summary_line(counts, found, 2, "exit code 2") == "tests: no pass/fail counts found in the output (exit 2)"
    assert summary_line({"passed": 1, "failed": 0, "errors": 1, "skipped": 2}, True, 1, "") == \
        "tests: 1 passed, 0 failed, 1 error, 2 skipped (exit 1)"
