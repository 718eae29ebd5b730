"""TUI tests: async tests run on asyncio through anyio's pytest plugin; helpers live in tui_helpers.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# --import-mode=importlib does not put test folders on sys.path; the helpers module needs it.
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
