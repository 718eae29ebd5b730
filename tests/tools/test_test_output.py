"""Test runners' real output (tests/tools/data/test_output/) → counts → the verdict the app's panel and
memory show (context/test_runs.py): pass, fail, error, collection or build error, no tests — for pytest,
unittest, go test, cargo test, jest, vitest, ExUnit and node's runner.

The pytest, unittest (3.11 and 3.12), cargo and node fixtures were captured from real runs; the go, jest,
vitest and ExUnit ones (those runners are not installed here) follow their formatters' source. Each is
fed in odd-sized chunks, as a stream arrives."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ctxagent.context.test_runs import run_outcome, run_verdict
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext
from ctxagent.tools.test_output import TestCounter

DATA = Path(__file__).parent / "data" / "test_output"

# fixture, the runner's exit code, (passed, failed, errors, skipped), verdict
CASES = [
    ("pytest-pass", 0, (2, 0, 0, 1), "pass"),
    ("pytest-fail", 1, (1, 1, 0, 0), "fail"),
    ("pytest-error", 1, (0, 0, 2, 0), "fail"),
    ("pytest-collection-error", 2, (0, 0, 2, 0), "fail"),
    ("pytest-no-tests", 5, (0, 0, 0, 0), "none"),
    ("unittest-pass", 0, (2, 0, 0, 2), "pass"),  # skipped=1, expected failures=1
    ("unittest-fail", 1, (1, 1, 1, 0), "fail"),
    ("unittest-fail-verbose", 1, (1, 1, 1, 0), "fail"),
    ("unittest-error", 1, (0, 0, 2, 0), "fail"),
    ("unittest-collection-error", 1, (0, 0, 2, 0), "fail"),
    ("unittest-no-tests", 0, (0, 0, 0, 0), "none"),
    ("unittest-no-tests-py312", 5, (0, 0, 0, 0), "none"),
    ("cargo-pass", 0, (2, 0, 0, 1), "pass"),  # the unit tests and the (empty) doc-tests, summed
    ("cargo-fail", 101, (1, 1, 0, 0), "fail"),
    ("cargo-build-error", 101, (0, 0, 1, 0), "fail"),
    ("cargo-no-tests", 0, (0, 0, 0, 0), "none"),
    ("node-fail", 1, (1, 1, 0, 1), "fail"),
    ("go-pass", 0, (2, 0, 0, 0), "pass"),  # without -v: the packages
    ("go-fail", 1, (1, 2, 0, 0), "fail"),  # the failing tests go prints, the passing package
    ("go-fail-verbose", 1, (4, 1, 0, 1), "fail"),  # subtests count
    ("go-build-error", 1, (1, 0, 1, 0), "fail"),
    ("go-no-tests", 0, (0, 0, 0, 0), "none"),
    ("jest-pass", 0, (2, 0, 0, 0), "pass"),
    ("jest-fail", 1, (1, 1, 0, 1), "fail"),
    ("jest-suite-error", 1, (1, 0, 1, 0), "fail"),
    ("jest-no-tests", 1, (0, 0, 0, 0), "none"),
    ("vitest-pass", 0, (2, 0, 0, 0), "pass"),
    ("vitest-fail", 1, (1, 1, 0, 1), "fail"),
    ("vitest-suite-error", 1, (1, 0, 1, 0), "fail"),
    ("vitest-no-tests", 1, (0, 0, 0, 0), "none"),
    ("exunit-pass", 0, (5, 0, 0, 0), "pass"),  # 1 doctest + 4 tests
    ("exunit-fail", 2, (2, 1, 0, 1), "fail"),  # 1 excluded did not run
    ("exunit-error", 2, (0, 0, 2, 0), "fail"),  # setup_all failed: 2 invalid
    ("exunit-compile-error", 1, (0, 0, 1, 0), "fail"),
    ("exunit-no-tests", 0, (0, 0, 0, 0), "none"),
]


def counted(text: str) -> tuple[dict[str, int], bool]:
    counter = TestCounter()
    data = text.encode()
    for i in range(0, len(data), 13):
        counter.feed(data[i:i + 13])
    return counter.finish(), counter.found


def test_every_fixture_has_a_case() -> None:
    assert sorted(p.stem for p in DATA.glob("*.txt")) == sorted(c[0] for c in CASES)


@pytest.mark.parametrize(("name", "exit_code", "expected", "verdict"), CASES, ids=[c[0] for c in CASES])
def test_real_runner_output(name: str, exit_code: int, expected: tuple[int, int, int, int], verdict: str) -> None:
    counts, found = counted((DATA / f"{name}.txt").read_text(encoding="utf-8"))
    assert found, name
    assert (counts["passed"], counts["failed"], counts["errors"], counts["skipped"]) == expected
    assert run_verdict(counts, found, exit_code) == verdict


def test_colour_codes_do_not_hide_a_summary() -> None:
    counts, found = counted("\x1b[31m1 doctest, 2 tests, 1 failure\x1b[0m\n")
    assert found and counts == {"passed": 2, "failed": 1, "errors": 0, "skipped": 0}


@pytest.mark.parametrize(
    ("counts", "found", "exit_code", "verdict"),
    [
        ({"passed": 3, "failed": 0, "errors": 0, "skipped": 0}, True, 0, "pass"),
        ({"passed": 3, "failed": 0, "errors": 0, "skipped": 0}, True, 1, "fail"),  # the runner said no
        ({"passed": 0, "failed": 0, "errors": 0, "skipped": 0}, False, 0, "pass"),  # only the exit code speaks
        ({"passed": 0, "failed": 0, "errors": 0, "skipped": 0}, False, 1, "fail"),
        ({"passed": 0, "failed": 0, "errors": 0, "skipped": 4}, True, 0, "none"),
        ({"passed": 9, "failed": 0, "errors": 0, "skipped": 0}, True, None, "pass"),  # no exit code: the counts
        ({"passed": 0, "failed": 0, "errors": 0, "skipped": 0}, False, None, "fail"),
    ],
)
def test_the_verdict_rule(counts: dict[str, int], found: bool, exit_code: int | None, verdict: str) -> None:
    assert run_verdict(counts, found, exit_code) == verdict


def test_a_timed_out_run_is_a_failure_whatever_it_counted() -> None:
    outcome = run_outcome({"tests": {"passed": 9}, "timed_out": True, "counts_found": True})
    assert outcome is not None and outcome.verdict == "fail" and outcome.words == "tests failed: timed out"
    assert run_outcome({"exit_code": 0}) is None  # not a test run


def _project(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_run_tests_through_unittest_and_a_collection_error(tmp_path: Path) -> None:
    """The demo's fallback when pytest is missing is `python -m unittest`: its counts are read, and a
    run that could not import its tests is a failure with its errors counted, not "ok"."""
    reg = make_registry()
    ok = _project(tmp_path / "ok", {"test_calc.py": (
        "import unittest\nclass T(unittest.TestCase):\n    def test_a(self): self.assertEqual(1, 1)\n"
        "    def test_b(self): self.assertEqual('中文', 'english')\n")})
    r = reg.run("run_tests", {"command": f"{sys.executable} -m unittest"}, ToolContext(root=ok, config={}))
    assert r.content.startswith("tests: 1 passed, 1 failed (exit 1)"), r.content[:300]
    outcome = run_outcome(r.meta)
    assert outcome is not None and outcome.verdict == "fail" and not r.is_error
    broken = _project(tmp_path / "broken", {"test_a.py": "import missing_module_xyz\n", "test_b.py": "def f(:\n"})
    r = reg.run("run_tests", {"command": f"{sys.executable} -m pytest -p no:cacheprovider"},
                ToolContext(root=broken, config={}))
    outcome = run_outcome(r.meta)
    assert outcome is not None and outcome.verdict == "fail"
    assert outcome.words == "tests failed: 0 passed, 0 failed, 2 errors (exit 2)"
