"""`ctxagent bench startup` measures what it says (no timing is asserted): the real program in a
pseudo-terminal against the scripted server, through a real SDK, the input drawn before the typed
message reaches the model."""

from __future__ import annotations

import sys

import pytest
from ctxagent.tui.lab.bench.startup import bench_launch, bench_wall, startup_text


@pytest.mark.slow  # launches the app twice through a provider SDK
@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal")
def test_launch_to_ready_runs_the_real_app() -> None:
    launch = bench_launch("openai:gpt-5.4-mini", runs=1)
    assert "skipped" not in launch, launch
    assert 0 < launch["drawn_p50_ms"] <= launch["ready_p50_ms"]  # drawn first, then ready: an order, not a speed
    version = bench_wall(["--version"], runs=1)
    assert version["command"] == "ctxagent --version" and version["p50_ms"] > 0
    text = startup_text({"version": version, "help": {}, "launch": [launch], "load_before": 1.0, "load_after": 1.0})
    assert "launch → ready (openai:gpt-5.4-mini)" in text and "launch → input drawn" in text
