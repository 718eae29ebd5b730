from __future__ import annotations

import math

from ctx_helpers import Log, numbered_lines, run
from ctxagent.context.budget import Budget
from ctxagent.context.prune import (
    LOW_VALUE,
    NORMAL_VALUE,
    PruneCandidate,
    prune_order,
    pruned_text,
    value_rank,
)
from ctxagent.context.tokens import get_counter

C = get_counter("o200k_base")


def test_value_rank() -> None:
    assert value_rank("Traceback ...", "shell", True) == LOW_VALUE
    assert value_rank("no matches found", "grep", False) == LOW_VALUE
    assert value_rank("未找到匹配", "grep", False) == LOW_VALUE
    assert value_rank("ok", "edit_file", False) == LOW_VALUE
    assert value_rank("", "shell", False) == LOW_VALUE
    assert value_rank("def main():\n    pass", "read_file", False) == NORMAL_VALUE
    assert value_rank("ok " + "x" * 500, "shell", False) == NORMAL_VALUE


def test_order_low_value_then_oldest() -> None:
    cands = [PruneCandidate(0, 10, NORMAL_VALUE), PruneCandidate(1, 5, NORMAL_VALUE), PruneCandidate(2, 20, LOW_VALUE), PruneCandidate(3, 15, LOW_VALUE)]
    assert [c.event_id for c in prune_order(cands)] == [15, 20, 5, 10]


def test_pruned_text_keeps_head_tail_and_says_where() -> None:
    content = numbered_lines(1000)
    out = pruned_text(content, C, 42)
    assert out.startswith("00000 output") and out.rstrip().endswith(content.splitlines()[-1])
    assert "the original: read_event id=42" in out
    assert C.count(out) < 400
    spilled = pruned_text(content, C, 7, {"handle": "abc123abc123"})
    assert "read_spill handle=abc123abc123" in spilled
    zh = pruned_text("\n".join(f"第{i}行中文输出" for i in range(500)), C, 1)
    assert "第0行" in zh and "第499行" in zh


def test_pruning_stops_as_soon_as_it_fits_oldest_first() -> None:
    log = Log()
    log.user("Start.")
    ids = [log.step("read_file", {"path": f"f{i}"}, numbered_lines(300, f"f{i}")).id for i in range(6)]
    log.user("Second.")
    log.user("Third.")
    full = run(log, strategy="full").report.total
    # just enough pressure for ~2 cuts
    # the slice rule (tests/context/test_slice_relief.py) turned off: this is the fit-the-limit tier alone
    res = run(log, window=full + 4096 - 5000, protect_turns=2,
              budget=Budget(full + 4096 - 5000, max_output=4096, tools_high=math.inf))
    assert res.pruned_ids == ids[: len(res.pruned_ids)] and 1 <= len(res.pruned_ids) < 6
    assert res.compaction is None
    assert res.report.pruned == len(res.pruned_ids)


def test_protect_turns_zero_allows_pruning_everything_old() -> None:
    log = Log()
    log.user("Only turn.")
    a = log.step("read_file", {"path": "a"}, numbered_lines(2000))
    full = run(log, strategy="full").report.total
    res = run(log, window=full + 4096 - 100, protect_turns=0)
    assert res.pruned_ids == [a.id]
