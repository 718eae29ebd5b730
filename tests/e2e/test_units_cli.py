"""`ctxagent inspect` and `ctxagent report` read the same number for a step: the provider's tokens (the
local count × the step's calibration), beside a percentage and a window in that unit (issue 24, item 6)."""

from __future__ import annotations

import re
from pathlib import Path

import ctxagent.context as ctx
from ctxagent.tui.cli.inspect import wire_body

MODEL = "openai:gpt-5.4-mini"


def test_inspect_and_report_agree_on_a_calibrated_step(repo: Path, ctxagent_run) -> None:
    read_file = ctx.ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
    setup = ctx.StepSetup(system="You are a careful agent.", tools=[read_file], budget=ctx.Budget(16_000, max_output=2_000),
                          counter=ctx.CachedCounter(ctx.get_counter("o200k_base")), model=MODEL)
    from ctxagent.context.floor.state_paths import ensure_state_dir

    sessions = ensure_state_dir(repo) / "sessions"  # a state folder ctxagent made (and marked)
    sessions.mkdir(parents=True)
    with ctx.SessionLog.create(sessions, "20260101-000000-units") as log:
        ctx.record_system_prompt(log, setup.system, setup.tools)
        log.append(ctx.UserData(text="What does calc.py do? 请简短回答。 " * 40, turn=1))
        step = ctx.build_step(log, setup, calibration_ratio=1.18, body=lambda r: wire_body(MODEL, r))
    report = step.result.report
    assert report.calibrated_total != report.total
    inspect = ctxagent_run(repo, "inspect", "20260101-000000-units", "--step", "1")
    assert inspect.returncode == 0, inspect.stderr
    head = inspect.stdout.splitlines()[0]
    assert f"· {report.calibrated_total:,} tokens · {ctx.usage_text(report.usage_pct, 1)} of 16,000" in head
    assert "as the provider counts them" in head and f"{report.total:,} × 1.18" in head
    table = ctxagent_run(repo, "report", "20260101-000000-units")
    row = next(ln for ln in table.stdout.splitlines() if re.match(r"\s*1 \|", ln))
    assert f"{report.calibrated_total:,}" in row
