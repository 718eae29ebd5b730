"""The strategy names: one list, every name builds, and reading it loads no builder (the config reads
it before the TUI's first frame)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
from ctx_helpers import Log, inputs, numbered_lines
from ctxagent.context.builder.dispatch import build
from ctxagent.context.strategies import STRATEGIES


def test_every_strategy_builds_and_an_unknown_one_is_named() -> None:
    log = Log()
    log.user("Read the parser.")
    log.step("read_file", {"path": "parser.py"}, numbered_lines(50))
    for name in STRATEGIES:
        res = build(inputs(log, strategy=name))
        assert res.report.strategy == name and res.request.messages[-1].event_id == 2
    with pytest.raises(ValueError, match="unknown strategy 'magic': use 'ctxagent', 'full', 'window'"):
        build(dataclasses.replace(inputs(log), strategy="magic"))


def test_reading_the_names_loads_no_builder() -> None:
    code = ("import sys, ctxagent.context.strategies; "
            "print(','.join(m for m in sys.modules if m.startswith(('ctxagent.context.builder', "
            "'ctxagent.context.memory', 'ctxagent.context.tokens', 'sqlite3', 'tiktoken'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
