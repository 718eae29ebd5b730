"""Fixtures of the hostile-repository corpus (generators in corpus.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# --import-mode=importlib does not put test folders on sys.path; corpus.py is imported by the tests.
sys.path.insert(0, str(Path(__file__).parent))

from corpus import Victim, make_victim  # noqa: E402


@pytest.fixture
def victim(tmp_path: Path) -> Victim:
    """A home folder outside every repository: a secret, a .bashrc, and a folder for marker files."""
    return make_victim(tmp_path)
