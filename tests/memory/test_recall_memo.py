"""The warm block's memo: an unchanged question over an unchanged store is answered without a query,
and any write — by this connection or another one on the same file — is seen at the next step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ctxagent.context.memory import MemoryStore
from ctxagent.context.memory.recall import MemoryRecall
from ctxagent.context.tokens import get_counter

COUNTER = get_counter("o200k_base")


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = MemoryStore.open(tmp_path / "memory.db", embeddings=False)
    s.add("Don't modify config files", "constraint", pinned=True, session="s1", turn=1)
    s.add("the parser in src/parser.py fails on nested tuples", "note", session="s1", turn=1)
    s.add("解析器在嵌套元组上失败，改用迭代遍历", "decision", session="s1", turn=1)
    yield s
    s.close()


def _fresh(store: MemoryStore, query: str, files: list[str], turn: int = 2) -> str:
    return MemoryRecall(store, "s1").warm_block(query, files, turn, 2000, COUNTER)


def test_unchanged_question_and_store_make_no_query(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    recall = MemoryRecall(store, "s1")
    first = recall.warm_block("why does the parser fail on nested tuples", ["src/parser.py"], 2, 2000, COUNTER)
    assert "nested tuples" in first and "config files" in first
    calls: list[str] = []
    real = store.lexical_search
    monkeypatch.setattr(store, "lexical_search", lambda q, **kw: calls.append(q) or real(q, **kw))
    again = recall.warm_block("why does the parser fail on nested tuples", ["src/parser.py"], 2, 2000, COUNTER)
    assert again == first and calls == []
    # another question, another file, another cap: each is asked
    other = recall.warm_block("嵌套元组 解析器", [], 2, 2000, COUNTER)
    assert "迭代遍历" in other and len(calls) == 1
    recall.warm_block("嵌套元组 解析器", [], 2, 40, COUNTER)
    assert len(calls) == 2
    assert other == _fresh(store, "嵌套元组 解析器", [])


def test_a_write_is_seen_at_the_next_step(store: MemoryStore) -> None:
    recall = MemoryRecall(store, "s1")
    q, files = "parser nested tuples", ["src/parser.py"]
    before = recall.warm_block(q, files, 2, 2000, COUNTER)
    store.add("nested tuples: the parser now walks iteratively", "change", session="s1", turn=2)
    after = recall.warm_block(q, files, 2, 2000, COUNTER)
    assert after != before and "walks iteratively" in after
    assert after == _fresh(store, q, files)
    rid = next(r.id for r in store.list(type="change"))
    store.forget(rid)
    assert recall.warm_block(q, files, 2, 2000, COUNTER) == before == _fresh(store, q, files)


def test_another_connection_s_commit_is_seen(store: MemoryStore, tmp_path: Path) -> None:
    recall = MemoryRecall(store, "s1")
    q = "parser nested tuples"
    before = recall.warm_block(q, [], 2, 2000, COUNTER)
    with MemoryStore.open(tmp_path / "memory.db", embeddings=False) as other:
        other.add("nested tuples come from the generated grammar", "note", session="s2", turn=1)
    after = recall.warm_block(q, [], 2, 2000, COUNTER)
    assert after != before and "generated grammar" in after
    assert after == _fresh(store, q, [])


def test_the_revision_moves_only_with_a_change(store: MemoryStore) -> None:
    rev = store.revision()
    store.lexical_search("parser", layer="warm")
    store.age(2)  # nothing is old enough: no row changes
    assert store.revision() == rev
    store.add("a new note about the lexer", "note", session="s1", turn=2)
    assert store.revision() != rev
