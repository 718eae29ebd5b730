"""Image tests: helpers live in image_helpers.py; the end-to-end fixtures are tests/e2e/conftest.py's
own (a real git repository, the real scripted server as a subprocess, the real console script),
loaded from that one file rather than kept as a copy."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

# --import-mode=importlib does not put test folders on sys.path; image_helpers.py needs it.
sys.path.insert(0, str(Path(__file__).parent))

_spec = importlib.util.spec_from_file_location("e2e_fixtures", Path(__file__).parent.parent / "e2e" / "conftest.py")
assert _spec is not None and _spec.loader is not None
_e2e = importlib.util.module_from_spec(_spec)
sys.modules["e2e_fixtures"] = _e2e  # image_helpers.e2e() hands its helpers to the test modules
_spec.loader.exec_module(_e2e)

git, run_ctxagent, session_events = _e2e.git, _e2e.run_ctxagent, _e2e.session_events
repo, scripted_server = _e2e.repo, _e2e.scripted_server
