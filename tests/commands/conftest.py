"""The end-to-end fixtures of tests/e2e (the real scripted server, the real console script), shared."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_e2e_fixtures", Path(__file__).parent.parent / "e2e" / "conftest.py")
assert _spec is not None and _spec.loader is not None
_e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_e2e)

scripted_server = _e2e.scripted_server
ctxagent_run = _e2e.ctxagent_run
read_session = _e2e.read_session
