"""Architecture rules that must hold at every commit: one-way imports, textual only in tui/, ruff clean."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# what each layer may import from ctxagent (tui → agent → tools → context)
ALLOWED = {
    "context": {"context"},
    "tools": {"tools", "context"},
    "agent": {"agent", "tools", "context"},
    "tui": {"tui", "agent", "tools", "context"},
}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_imports_are_one_way() -> None:
    bad: list[str] = []
    for layer, allowed in ALLOWED.items():
        for path in (ROOT / layer).rglob("*.py"):
            for name in _imports(path):
                parts = name.split(".")
                if parts[0] == "ctxagent" and len(parts) > 1 and parts[1] not in allowed:
                    bad.append(f"{path.relative_to(ROOT)} imports {name}")
                if parts[0] == "textual" and layer != "tui":
                    bad.append(f"{path.relative_to(ROOT)} imports textual outside tui/")
    assert not bad, "\n".join(bad)


def test_ruff_clean() -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    out = subprocess.run([ruff, "check", "agent", "tools", "context", "tui", "tests"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
