"""Catastrophic regular expressions and globs never hang a tool.

Python's `re` backtracks without bound: `(?=a)(a+)+$` or `(a|aa)+$` on a line of a's, or the glob
`*a*a*a*a*a*b` on a 250-character name, ran for minutes to ages and could not be interrupted. Each
case must come back — with its answer, or with an error telling the model the pattern was refused
or stopped. pytest-timeout is the guard (no wall-clock assertions); the per-call budget is set low
through `regex_seconds` so the suite stays quick, and one case runs with the default budget.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from ctxagent.context.floor.bounded_regex import MATCH_SECONDS
from ctxagent.context.spill import SpillStore
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext, ToolServices
from ctxagent.tools.spill_tool import READ_SPILL

REG = make_registry([READ_SPILL])
FAST = {"regex_seconds": 0.5}
LINE = "a" * 5000 + "b"  # a long run of a's and then the one character that makes every try fail


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "aaaa.txt").write_text(f"{LINE}\n" * 3 + "plain line\n")
    (root / ("a" * 250)).write_text("long name\n")
    (root / ("a" * 249 + "b")).write_text("long name ending in b\n")
    return root


def _ctx(repo: Path, engine: str = "python", **config: object) -> ToolContext:
    return ToolContext(root=repo, config={"grep_engine": engine, **FAST, **config})


@pytest.mark.timeout(60)
@pytest.mark.parametrize("engine", ["python", "auto"])  # auto: ripgrep refuses the look-ahead, Python runs it
def test_lookahead_nested_repeat_is_stopped_with_a_clear_error(repo: Path, engine: str) -> None:
    r = REG.run("grep", {"pattern": "(?=a)(a+)+$"}, _ctx(repo, engine))
    assert r.is_error
    assert "'(?=a)(a+)+$' took longer than 0.5 s" in r.content and "use a simpler or more specific pattern" in r.content


@pytest.mark.timeout(60)
def test_the_same_pattern_on_short_lines_still_answers(repo: Path) -> None:
    (repo / "aaaa.txt").write_text("aaaa\naab\n")
    r = REG.run("grep", {"pattern": "(?=a)(a+)+$"}, _ctx(repo))
    assert not r.is_error and r.content == "aaaa.txt:1:aaaa"


@pytest.mark.timeout(60)
def test_alternation_blowup_is_stopped_with_a_clear_error(repo: Path) -> None:
    r = REG.run("grep", {"pattern": "(a|aa)+$"}, _ctx(repo))
    assert r.is_error
    assert "took longer than 0.5 s" in r.content and "backtracks catastrophically" in r.content
    assert "(a|aa)+$" in r.content


@pytest.mark.timeout(120)
def test_default_budget_also_stops_it(repo: Path) -> None:
    r = REG.run("grep", {"pattern": "(a|aa)+$"}, ToolContext(root=repo, config={"grep_engine": "python"}))
    assert r.is_error and f"took longer than {MATCH_SECONDS:g} s" in r.content


@pytest.mark.timeout(60)
def test_huge_repeat_counts_are_refused_before_compiling(repo: Path) -> None:
    # `regex` unrolls fixed counts: compiling this would need terabytes of memory
    r = REG.run("grep", {"pattern": "(?:x{65535}){65535}"}, _ctx(repo, "auto"))
    assert r.is_error and "refusing the regular expression" in r.content and "repeat counts" in r.content


@pytest.mark.timeout(60)
def test_glob_on_long_names_returns(repo: Path) -> None:
    r = REG.run("list_files", {"glob": "*a*a*a*a*a*b"}, _ctx(repo))
    assert not r.is_error, r.content
    assert r.content.splitlines()[1:] == ["a" * 249 + "b"]
    r = REG.run("grep", {"pattern": "long", "glob": "*a*a*a*a*a*b"}, _ctx(repo))
    assert not r.is_error and r.content == "a" * 249 + "b:1:long name ending in b"


@pytest.mark.timeout(60)
def test_a_glob_past_its_budget_is_an_error_not_a_hang(repo: Path) -> None:
    r = REG.run("list_files", {"glob": "*a*a*a*a*a*b"}, _ctx(repo, regex_seconds=1e-9))
    assert r.is_error and "the glob '*a*a*a*a*a*b' took longer than" in r.content


@pytest.mark.timeout(60)
def test_read_spill_grep_is_bounded_too(repo: Path) -> None:
    spill = SpillStore.for_root(repo)
    handle = spill.put("\n".join([LINE] * 20 + ["the end"]))
    ctx = ToolContext(root=repo, config=FAST, services=ToolServices(spill=spill))
    r = REG.run("read_spill", {"handle": handle, "grep": "(a|aa)+$"}, ctx)
    assert r.is_error and "took longer than 0.5 s" in r.content
    r = REG.run("read_spill", {"handle": handle, "grep": "the (end|start)$"}, ctx)  # a new call, a new budget
    assert not r.is_error and "1 matching lines of 21" in r.content
    r = REG.run("read_spill", {"handle": handle, "grep": "(?:x{65535}){65535}"}, ctx)  # refused → taken literally
    assert not r.is_error and "0 matching lines" in r.content


@pytest.mark.parametrize(("pattern", "bound"), [
    ("abc", 3), ("a{3}b{4}", 7), ("(ab){3}", 6), (r"\d{4}-\d{2}-\d{2}", 10), ("[{]{5}", 5), ("x{0,1000}", 1),
    ("((a{10}){10}){10}", 1000), (r"\p{Han}{3}", 3), ("(?#x{99})a", 1),
])
def test_expanded_size_counts_what_regex_unrolls(pattern: str, bound: int) -> None:
    from ctxagent.context.floor.bounded_regex import expanded_size

    assert expanded_size(pattern) == bound
