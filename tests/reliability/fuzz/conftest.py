"""The fuzz part of the reliability suite: deterministic (the "ctxagent" hypothesis profile of
tests/conftest.py: derandomized, no example database) and bounded (each test's max_examples)."""

from __future__ import annotations

import sys
from pathlib import Path

# --import-mode=importlib does not put test folders on sys.path; strategies.py needs it.
sys.path.insert(0, str(Path(__file__).parent))
