"""Context-engine tests: helpers live in ctx_helpers.py."""

from __future__ import annotations

import sys
from pathlib import Path

# --import-mode=importlib does not put test folders on sys.path; ctx_helpers.py needs it.
sys.path.insert(0, str(Path(__file__).parent))
