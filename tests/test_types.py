"""The type checker: mypy, configured in pyproject.toml (strict on ctxagent.context), is clean.

pyproject maps `ctxagent.agent` → `agent/` and so on; mypy finds modules by folder, so it checks a
tree of links laid out as `ctxagent/{agent,context,tools,tui}`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("agent", "context", "tools", "tui")


@pytest.mark.timeout(900)
def test_mypy_is_clean(tmp_path: Path) -> None:
    mypy = shutil.which("mypy") or str(Path(sys.executable).with_name("mypy"))
    if not Path(mypy).exists():
        pytest.fail("mypy is not installed: pip install -e '.[test]'")
    tree = tmp_path / "tree" / "ctxagent"
    tree.mkdir(parents=True)
    for part in PARTS:
        (tree / part).symlink_to(ROOT / part, target_is_directory=True)
    cache = Path(os.environ.get("CTXAGENT_MYPY_CACHE", tmp_path / "cache"))
    out = subprocess.run(
        [mypy, "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(cache), "-p", "ctxagent"],
        cwd=tree.parent, capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stdout[-8000:] + out.stderr[-2000:]
