"""Fixtures for the sub-agent tests: the end-to-end tests' own (tests/e2e/conftest.py — a real git
repository, the real scripted server as a subprocess, the real `ctxagent` console script), loaded
from that one file rather than kept as a copy."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("e2e_fixtures", Path(__file__).parent.parent / "e2e" / "conftest.py")
assert _spec is not None and _spec.loader is not None
_e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_e2e)

BIN = _e2e.BIN
CALC, TEST_CALC = _e2e.CALC, _e2e.TEST_CALC
git, run_ctxagent, session_events = _e2e.git, _e2e.run_ctxagent, _e2e.session_events
repo, scripted_server, ctxagent_run, read_session = _e2e.repo, _e2e.scripted_server, _e2e.ctxagent_run, _e2e.read_session
