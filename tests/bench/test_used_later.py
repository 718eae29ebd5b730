"""Used-later retention: the bench's own string rules, the history index, and the measure on hand-made trajectories."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from ctxagent.context.request import Message, ToolCall
from ctxagent.tui.lab.bench import used_later
from ctxagent.tui.lab.bench.readers import SourceEvent, Trajectory
from ctxagent.tui.lab.bench.replay_run import replay_source
from ctxagent.tui.lab.bench.used_later import HistoryIndex, UsedLater, atoms, handle_named, used_strings

SYSTEM = "You are a coding agent."


def test_the_extractor_finds_the_five_kinds_and_skips_plain_words() -> None:
    text = ("THOUGHT: The separability_matrix in astropy/modeling/separable.py:242 calls _cstack and HeaderParser; "
            "see self.n_outputs. ValueError: invalid literal for int() with base 10 at 12907. Run \"pytest -q tests\" "
            "but not __init__, Parser, parse, 3.14159 or v1.2.")
    found = used_strings([text])
    assert ("identifier", "separability_matrix") in found and ("identifier", "_cstack") in found
    assert ("identifier", "HeaderParser") in found and ("identifier", "self.n_outputs") in found
    assert ("identifier", "n_outputs") in found  # a dotted name's distinctive part counts on its own too
    assert ("path:line", "astropy/modeling/separable.py:242") in found
    assert ("number", "12907") in found
    assert ("error", "ValueError: invalid literal for int() with base 10 at") in found  # cut at 60, at a space
    assert ("quoted", "pytest -q tests") in found
    words = {s for _, s in found}
    for plain in ("THOUGHT", "__init__", "Parser", "parse", "3.14159", "14159", "v1.2"):
        assert plain not in words, plain
    # errors are cut at 60 characters, at a space
    long = used_strings(["TypeError: " + "word " * 40])
    assert [s for k, s in long if k == "error"] == ["TypeError: " + " ".join(["word"] * 9)]


def test_atoms_match_whole_tokens_any_run_of_a_dotted_name_and_any_suffix_of_a_path() -> None:
    got = atoms("x = foo.bar_baz.qux(); see pkg/io/fits/header.py:120 and parse_header_block")
    assert {"foo.bar_baz", "bar_baz.qux", "foo.bar_baz.qux", "bar_baz", "parse_header_block"} <= got
    assert {"pkg/io/fits/header.py:120", "fits/header.py:120", "header.py:120"} <= got
    assert "parse_header" not in got  # a name inside a longer name is not that name
    assert "foo" not in got and "qux" not in got  # plain words are no atoms


def test_history_index_says_what_appeared_earlier() -> None:
    h = HistoryIndex()
    h.add(0, "Fix parse_header_block; it fails with KeyError: 'SIMPLE' in header.py:77")
    h.add(2, "nothing here")
    assert h.seen("identifier", "parse_header_block") and not h.seen("identifier", "parse_header")
    assert h.seen("path:line", "header.py:77") and not h.seen("path:line", "header.py:78")
    assert h.seen("quoted", "SIMPLE") and not h.seen("quoted", "COMPLEX")
    h.add(4, "later: COMPLEX")
    assert h.seen("quoted", "COMPLEX")  # a phrase not found before is looked for again in what came since
    assert h.holders("identifier", "parse_header_block") == [0] and h.holders("quoted", "COMPLEX") == [4]


def test_shares_pooled_and_per_call_before_and_after() -> None:
    u = UsedLater()
    u.add([("identifier", "a_b"), ("number", "1234")], [True, False], after=False)
    u.add([("identifier", "c_d")], [True], after=True)
    u.add([], [], after=True)  # a call that used nothing earlier does not count
    d = u.to_dict()
    assert d["strings"] == 3 and d["pooled"] == pytest.approx(2 / 3, abs=1e-4)
    assert d["mean_over_calls"] == pytest.approx((0.5 + 1.0) / 2, abs=1e-4) and d["calls"] == 2
    assert d["before_source_compaction"] == {"strings": 2, "pooled": 0.5, "calls": 1}
    assert d["after_source_compaction"]["pooled"] == 1.0
    assert d["by_kind"] == {"identifier": {"strings": 2, "pooled": 1.0}, "number": {"strings": 1, "pooled": 0.0}}


def test_a_handle_names_an_event_by_id_range_or_spill() -> None:
    lane_ids = {3: 10, 5: 12, 7: 14}
    spills = {12: "abc123def456"}
    assert handle_named([3], lane_ids, spills, ({10}, [], set()))
    assert handle_named([7], lane_ids, spills, (set(), [(13, 20)], set()))
    assert handle_named([5], lane_ids, spills, (set(), [], {"abc123def456"}))
    assert not handle_named([3, 7], lane_ids, spills, ({12}, [(0, 9)], {"zzz"}))


def test_the_rules_are_the_benchs_own() -> None:
    tree = ast.parse(Path(used_later.__file__).read_text(encoding="utf-8"))
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + [
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m.startswith("ctxagent")]


# -- the measure in the replay -----------------------------------------------------------------------
def _call(t: Trajectory, cid: str, command: str, text: str = "THOUGHT") -> None:
    t.add_assistant(text, [{"id": cid, "name": "bash", "arguments": {"command": command}}], None)


def _listing(n: int, needle_at: int) -> str:
    rows = [f"row {i:04d}: value = compute(alpha, beta) # entry {i}" for i in range(n)]
    rows[needle_at] = "def parse_header_block(stream): # the one to fix"
    return "\n".join(rows)


def used_trajectory(compact: bool = False) -> Trajectory:
    """Call 1 lists a module whose middle names parse_header_block; two plain steps follow; call 4 greps for it."""
    t = Trajectory("mini-swe-agent", "used", system=SYSTEM)
    t.add_user("Fix the header parser in the fits module.")  # no file names: the only string used later is the name
    _call(t, "c1", "cat src/fits")
    t.add_tool_result("c1", "bash", _listing(700, 350))
    _call(t, "c2", "ls src")
    t.add_tool_result("c2", "bash", "fits\nutil")
    _call(t, "c3", "python -V")
    t.add_tool_result("c3", "bash", "Python 3.11.7")
    if compact:
        t.events.append(SourceEvent("source_compaction", {"summary": "We listed the fits module.", "pre_tokens": 9000}))
    _call(t, "c4", "grep -n parse_header_block src/fits", "THOUGHT: parse_header_block is where it breaks.")
    t.add_tool_result("c4", "bash", "351:def parse_header_block(stream):")
    t.add_assistant("done", [], None)
    return t


def test_full_keeps_what_the_agent_used_a_trivial_baseline_does_not() -> None:
    res = replay_source([used_trajectory()], 12_000, strategies=["full", "window", "ctxagent", "grep", "last2+names"],
                        use_memory=False, overhead="none")
    s = res["strategies"]
    # only call 4 used a string seen before (parse_header_block, once in its text, once in its command: one string)
    assert s["full"]["used_later"]["strings"] == 1 and s["full"]["used_later"]["pooled"] == 1.0
    assert s["reference"]["used_later"]["pooled"] == 1.0
    for name in ("window", "grep", "last2+names"):  # a 4,000-token cap, and the baselines, lose the listing's middle
        assert s[name]["used_later"]["pooled"] == 0.0, name
    ctx = s["ctxagent"]["used_later"]
    # ctxagent spilled the listing (over 2,000 tokens): the middle is behind the spill's read_spill handle
    assert s["ctxagent"]["spills"] == 1 and ctx["pooled"] == 0.0
    assert ctx["missing"] == {"strings": 1, "behind_handle": 1, "gone": 0, "build_failed": 0}


def test_before_and_after_the_sources_own_compaction() -> None:
    res = replay_source([used_trajectory(compact=True)], 200_000, strategies=["full"], use_memory=False,
                        overhead="none")
    ref, full = res["strategies"]["reference"]["used_later"], res["strategies"]["full"]["used_later"]
    assert full["after_source_compaction"] == {"strings": 1, "pooled": 1.0, "mean_over_calls": 1.0, "calls": 1}
    assert ref["after_source_compaction"]["pooled"] == 0.0  # the real summary kept no parse_header_block
    assert res["after_source_compaction"]["used_later"] == {"full": 1.0, "reference": 0.0}


def test_presence_reads_tool_arguments_as_written() -> None:
    """A name at the start of a line of a Write's content is a name, not JSON's escaped `\\n` glued to it."""
    facts = used_later.MessageFacts()
    call = Message("assistant", "", tool_calls=[ToolCall("c1", "write", {"content": "x = 1\nparse_header_block(s)"})])
    assert "parse_header_block" in facts.atoms(1, call)
