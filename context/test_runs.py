"""Whether a test run passed — the one rule, read by the app's tool panel (its mark) and by memory
(the note it keeps and its tag), from the facts run_tests logs in its meta (tools/tests_runner.py):
the counts parsed from the output (`tests`, `counts_found`) and the exit code.

    fail   it timed out, a test failed or errored (a collection or build error counts as an error),
           or the runner exited non-zero
    none   the output's counts name no test that ran and passed (pytest's "no tests ran", jest's
           "No tests found", everything skipped), whatever the exit code
    pass   exit 0, and a passed test counted or no counts found (then the exit code says)

A failing run is never shown as "ok" because the tool itself worked: the tool's own error flag says
whether the command could run, this says what the tests said.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxagent.context.events import ToolMeta

__all__ = ["RunOutcome", "counts_text", "run_outcome", "run_verdict"]

COUNT_KEYS = ("passed", "failed", "errors", "skipped")
VERDICT_WORDS = {"pass": "tests passed", "fail": "tests failed", "none": "no tests ran"}


def run_verdict(counts: Mapping[str, int], found: bool, exit_code: int | None) -> str:
    """"pass" | "fail" | "none" (see the module's rule). Without an exit code (a hand-made or foreign
    log) the counts alone decide, and no counts say nothing passed."""
    if counts.get("failed", 0) > 0 or counts.get("errors", 0) > 0:
        return "fail"
    if found and counts.get("passed", 0) == 0:
        return "none"
    if exit_code is None:
        return "pass" if found else "fail"
    return "pass" if exit_code == 0 else "fail"


def counts_text(counts: Mapping[str, int], found: bool, exit_code: int | None) -> str:
    """"1 passed, 0 failed, 2 errors (exit 2)"; what the output did not say is said."""
    code = f" (exit {exit_code})" if exit_code is not None else ""
    if not found:
        return f"no pass/fail counts found in the output{code}"
    parts = [f"{counts.get('passed', 0)} passed", f"{counts.get('failed', 0)} failed"]
    for key in ("errors", "skipped"):
        n = counts.get(key, 0)
        if n:
            parts.append(f"{n} {'error' if key == 'errors' and n == 1 else key}")
    return ", ".join(parts) + code


@dataclass(frozen=True)
class RunOutcome:
    verdict: str  # "pass" | "fail" | "none"
    counts: dict[str, int] = field(default_factory=dict)
    found: bool = False
    exit_code: int | None = None
    timed_out: bool = False

    @property
    def headline(self) -> str:
        """"tests failed" / "tests passed" / "no tests ran"."""
        return VERDICT_WORDS[self.verdict]

    @property
    def detail(self) -> str:
        if self.timed_out:
            return "timed out"
        return counts_text(self.counts, self.found, self.exit_code)

    @property
    def words(self) -> str:
        """"tests failed: 0 passed, 0 failed, 2 errors (exit 2)"."""
        return f"{self.headline}: {self.detail}"


def run_outcome(meta: ToolMeta | Mapping[str, Any] | None) -> RunOutcome | None:
    """The outcome of a test run from its result's meta; None when the result is not a test run
    (its meta holds no counts)."""
    data = meta.to_data() if isinstance(meta, ToolMeta) else dict(meta or {})
    tests = data.get("tests")
    if not isinstance(tests, Mapping):
        return None
    counts = {k: int(v) if isinstance(v, int) and not isinstance(v, bool) else 0 for k, v in
              ((k, tests.get(k, 0)) for k in COUNT_KEYS)}
    exit_code = data.get("exit_code")
    exit_code = exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None
    found_value = data.get("counts_found")
    found = bool(found_value) if isinstance(found_value, bool) else any(counts.values())  # older logs: no flag
    timed_out = data.get("timed_out") is True
    verdict = "fail" if timed_out else run_verdict(counts, found, exit_code)
    return RunOutcome(verdict, counts, found, exit_code, timed_out)

