"""Pass / fail / error / skip counts from what a test runner printed, fed as the output streams.

    pytest       "=== 1 failed, 2 passed, 1 skipped in 0.12s ===", "2 errors in 0.3s" (collection),
                 "no tests ran in 0.01s"
    unittest     "Ran 3 tests in 0.002s" then "OK (skipped=1)" / "FAILED (failures=1, errors=1)" /
                 "NO TESTS RAN" (Django's runner prints the same)
    go test      "--- PASS/FAIL/SKIP: TestX" with -v; without it the package lines ("ok  \tpkg\t0.01s",
                 "FAIL\tpkg\t0.02s") and the "--- FAIL" lines go prints anyway; "[build failed]" is an error
    cargo test   "test result: ok. 3 passed; 0 failed; 1 ignored; …" per test binary, summed;
                 "error: could not compile `x`" is an error
    jest         "Tests:       1 failed, 2 skipped, 5 passed, 8 total"; each "● Test suite failed to
                 run" is an error; "No tests found"
    vitest       "      Tests  2 failed | 10 passed | 1 skipped (13)"; "Failed Suites N" and
                 "Errors  N errors" are errors; "No test files found"
    ExUnit       "1 doctest, 11 tests, 1 failure, 1 excluded, 2 invalid, 1 skipped"; a compile error
                 ("** (CompileError) …") is an error
    node --test  "# pass 3" / "ℹ fail 1";   mocha "12 passing", "1 failing";   a plain "N passed, N failed"

Counts are read line by line as the output streams (`TestCounter.feed`), so they survive the middle
of a long output being cut. Whether the run passed is not decided here: the exit code and these
counts decide it, in one rule (context/test_runs.py).
"""

from __future__ import annotations

import re

KEYS = ("passed", "failed", "errors", "skipped")

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_PYTEST_SUMMARY = re.compile(r"^=*\s*(?:\d+ \w+(?:, )?)+.* in [\d.]+s")
_PYTEST_NONE = re.compile(r"^=*\s*no tests ran\b")
_PYTEST_ITEM = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s$")
_UNITTEST_END = re.compile(r"^(OK|FAILED)(?: \((.*)\))?$")
_CARGO = re.compile(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")
_CARGO_BUILD = re.compile(r"^error: could not compile `")
_JEST = re.compile(r"^Tests:\s+(.*\d+ total)")
_JEST_SUITE_ERROR = re.compile(r"^\s*● Test suite failed to run")
_VITEST = re.compile(r"^\s*Tests\s+(.*)\(\d+\)\s*$")
_VITEST_NONE = re.compile(r"^\s*Tests\s+no tests\s*$")
_VITEST_SUITES = re.compile(r"Failed Suites (\d+)")
_VITEST_ERRORS = re.compile(r"^\s*Errors\s+(\d+) errors?\b")
_NO_TESTS_FOUND = re.compile(r"^(?:No tests found|No test files found)\b")
_EXUNIT = re.compile(r"^((?:\d+ \w+, )*)(\d+) failures?((?:, \d+ (?:excluded|invalid|skipped))*)$")
_EXUNIT_COMPILE = re.compile(r"^\*\* \((?:CompileError|SyntaxError|TokenMissingError|MismatchedDelimiterError)\)")
_NODE = re.compile(r"^(?:#|ℹ)\s*(pass|fail|skipped|todo|cancelled)\s+(\d+)\s*$")
_MOCHA = re.compile(r"^\s+(\d+) (passing|failing|pending)\b")
_PLAIN = re.compile(r"^(?:\w+:\s*)?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?\s*$")
_GO = re.compile(r"^\s*--- (PASS|FAIL|SKIP):")
_GO_RUN = re.compile(r"^=== RUN\s")
_GO_PKG = re.compile(r"^(ok|FAIL)\s+\S+(?:\s|$)")
_GO_NO_FILES = re.compile(r"^\?\s+\S+\t\[no test files\]")


def zero() -> dict[str, int]:
    return dict.fromkeys(KEYS, 0)


class TestCounter:
    """Fed the output line by line as it streams; `finish()` gives the counts, `found` whether any
    runner's summary (or a runner's own "no tests" line) was seen."""

    __test__ = False  # not a pytest class

    def __init__(self) -> None:
        self.counts = zero()
        self.found = False
        self._pending = b""
        self._summary: dict[str, int] | None = None  # the last whole-run summary line wins
        self._cargo: dict[str, int] | None = None  # one summary per test binary: summed
        self._unittest_ran: int | None = None
        self._go = {"PASS": 0, "FAIL": 0, "SKIP": 0}
        self._go_verbose = False
        self._go_pkgs = {"ok": 0, "FAIL": 0, "build": 0, "empty": 0}
        self._suite_errors = 0  # jest's suites that failed to run, vitest's failed suites and errors
        self._build_errors = 0  # cargo's crates that did not compile, ExUnit's compile errors

    def feed(self, chunk: bytes) -> None:
        data = self._pending + chunk
        *lines, self._pending = data.split(b"\n")
        if len(self._pending) > 65536:  # one giant line: nothing countable in it
            self._pending = b""
        for raw in lines:
            self.line(raw.decode("utf-8", "replace").rstrip("\r"))

    def line(self, line: str) -> None:
        if "\x1b" in line:
            line = _ANSI.sub("", line)
        stripped = line.strip()
        if m := _CARGO.search(line):
            self._cargo = self._cargo or zero()
            for key, n in (("passed", m[1]), ("failed", m[2]), ("skipped", m[3])):
                self._cargo[key] += int(n)
        elif _CARGO_BUILD.match(line) or _EXUNIT_COMPILE.match(line):
            self._build_errors += 1
        elif m := _UNITTEST_RAN.match(stripped):
            self._unittest_ran = int(m[1])
        elif self._unittest_ran is not None and (m := _UNITTEST_END.match(stripped)):
            self._summary = _unittest(self._unittest_ran, m[2] or "")
            self._unittest_ran = None
        elif stripped == "NO TESTS RAN":
            self._summary = zero()
        elif m := _GO.match(line):
            self._go[m[1]] += 1
            self._go_verbose = self._go_verbose or m[1] == "PASS"
        elif _GO_RUN.match(line):
            self._go_verbose = True
        elif (m := _GO_PKG.match(line)) and ("\t" in line or "[build failed]" in line):
            if "[build failed]" in line or "[setup failed]" in line:
                self._go_pkgs["build"] += 1
            elif "[no tests to run]" not in line:
                self._go_pkgs[m[1]] += 1
            else:
                self._go_pkgs["empty"] += 1
        elif _GO_NO_FILES.match(line):
            self._go_pkgs["empty"] += 1
        elif m := _JEST.match(line):
            self._summary = _items(m[1], {"failed": "failed", "passed": "passed", "skipped": "skipped", "todo": "skipped"})
        elif _JEST_SUITE_ERROR.match(line):
            self._suite_errors += 1
        elif _VITEST_NONE.match(line):
            self._summary = zero()
        elif (m := _VITEST.match(line)) and "Test Files" not in line:
            self._summary = _items(m[1], {"failed": "failed", "passed": "passed", "skipped": "skipped", "todo": "skipped"})
        elif m := _VITEST_SUITES.search(line):
            self._suite_errors += int(m[1])
        elif m := _VITEST_ERRORS.match(line):
            self._suite_errors += int(m[1])
        elif _NO_TESTS_FOUND.match(stripped):
            self._summary = self._summary or zero()
        elif m := _EXUNIT.match(stripped):
            self._summary = _exunit(m[1], int(m[2]), m[3])
        elif m := _NODE.match(line):
            key = {"pass": "passed", "fail": "failed", "skipped": "skipped", "todo": "skipped", "cancelled": "errors"}[m[1]]
            self._summary = {**(self._summary or {}), key: (self._summary or {}).get(key, 0) + int(m[2])}
        elif m := _MOCHA.match(line):
            key = {"passing": "passed", "failing": "failed", "pending": "skipped"}[m[2]]
            self._summary = {**(self._summary or {}), key: int(m[1])}
        elif m := _PLAIN.match(line):
            self._summary = {"passed": int(m[1]), "failed": int(m[2]), "skipped": int(m[3] or 0)}
        elif _PYTEST_SUMMARY.match(stripped) or _PYTEST_NONE.match(stripped):
            found = zero()
            for n, word in _PYTEST_ITEM.findall(line):
                key = {"error": "errors", "errors": "errors", "xfailed": "skipped", "xpassed": "passed"}.get(word, word)
                found[key] += int(n)
            self._summary = found

    def finish(self) -> dict[str, int]:
        if self._pending:
            self.line(self._pending.decode("utf-8", "replace"))
            self._pending = b""
        counts = zero()
        go = self._go_verbose or any(self._go_pkgs.values()) or self._go["FAIL"]
        if self._cargo is not None:
            counts.update(self._cargo)
        elif self._summary is not None:
            counts.update(self._summary)
        elif go and self._go_verbose:
            counts.update(passed=self._go["PASS"], failed=self._go["FAIL"], skipped=self._go["SKIP"])
        elif go:  # `go test` without -v names the failing tests and the packages only
            counts.update(passed=self._go_pkgs["ok"], failed=self._go["FAIL"] or self._go_pkgs["FAIL"])
        elif not (self._build_errors or self._suite_errors or self._go_pkgs["build"]):
            self.found = False
            return counts
        counts["errors"] += self._build_errors + self._suite_errors + self._go_pkgs["build"]
        self.found = True
        self.counts = counts
        return counts


def _items(text: str, names: dict[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for n, word in re.findall(r"(\d+) (\w+)", text):
        if word in names:
            out[names[word]] = out.get(names[word], 0) + int(n)
    return out


def _unittest(ran: int, details: str) -> dict[str, int]:
    """unittest's "FAILED (failures=1, errors=2, skipped=1, expected failures=1, unexpected successes=1)"."""
    said = {k.strip(): int(v) for k, v in re.findall(r"([a-z ]+)=(\d+)", details)}
    failed = said.get("failures", 0) + said.get("unexpected successes", 0)
    skipped = said.get("skipped", 0) + said.get("expected failures", 0)
    errors = said.get("errors", 0)
    return {"passed": max(0, ran - failed - errors - skipped), "failed": failed, "errors": errors, "skipped": skipped}


def _exunit(kinds: str, failures: int, rest: str) -> dict[str, int]:
    """ExUnit's "1 doctest, 11 tests, 1 failure, 1 excluded, 2 invalid, 1 skipped": every kind of test
    counted first ("1 doctest, 11 tests, "), then what did not pass (excluded tests did not run)."""
    total = sum(int(n) for n in re.findall(r"(\d+) \w+", kinds))
    extra = {word: int(n) for n, word in re.findall(r"(\d+) (excluded|invalid|skipped)", rest)}
    invalid, skipped, excluded = extra.get("invalid", 0), extra.get("skipped", 0), extra.get("excluded", 0)
    return {"passed": max(0, total - failures - invalid - skipped - excluded), "failed": failures,
            "errors": invalid, "skipped": skipped}
