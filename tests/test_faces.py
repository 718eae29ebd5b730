"""The package faces: every name in `__all__` resolves, the lazy map and the type checker's imports
agree, and importing a face loads no provider SDK, pydantic or tokenizer."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FACES = {"ctxagent.agent": ROOT / "agent" / "__init__.py", "ctxagent.context": ROOT / "context" / "__init__.py"}


def _type_checking_names(path: Path) -> dict[str, str]:
    """name -> module of the face's `if TYPE_CHECKING:` imports (`name as name`: how a type checker is
    told the name is re-exported)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module
                for alias in imp.names:
                    assert alias.asname in (None, alias.name), f"{alias.name} is exported under another name"
                    names[alias.name] = imp.module
    return names


@pytest.mark.parametrize("face", sorted(FACES))
def test_every_exported_name_resolves(face: str) -> None:
    module = importlib.import_module(face)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018


@pytest.mark.parametrize("face", sorted(FACES))
def test_lazy_map_matches_type_checking_imports(face: str) -> None:
    module = importlib.import_module(face)
    lazy = dict(module._EXPORTS)
    assert _type_checking_names(FACES[face]) == lazy


def test_importing_the_faces_is_cheap() -> None:
    code = ("import sys, ctxagent.agent, ctxagent.context; "
            "heavy = [m for m in ('anthropic', 'openai', 'pydantic', 'tiktoken', 'textual', 'sqlite3') if m in sys.modules]; "
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("face", sorted(FACES))
def test_no_face_name_is_also_a_submodule(face: str) -> None:
    """Importing `ctxagent.context.builder` sets the attribute `builder` on `ctxagent.context`: a face name
    equal to a submodule's would then read as the module (`from ctxagent.agent import trust`)."""
    module = importlib.import_module(face)
    folder = FACES[face].parent
    submodules = {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
    assert not set(module.__all__) & submodules
