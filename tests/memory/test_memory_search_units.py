"""Search over a few filtered records asks FTS5 only about the query units those records can hold
(context/memory/fts_tokens.py): the same records, in the same order, with the same scores as asking
about every unit — on real SQLite, with English, accented Latin, Chinese and code."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ctxagent.context.language.terms import Synonyms
from ctxagent.context.memory import MemoryStore, fts_tokens, search
from hypothesis import HealthCheck, given, settings, strategies as st

WORDS = ["login", "parser", "cache", "naïve", "café", "Søren", "Straße", "łódź", "résumé", "getUserName",
         "src/auth/login.py", "用户登录", "数据库", "缓存", "retry", "PostgreSQL", "x²", "ﬁle", "Ωmega", "test_cache",
         "decimal", "hello", "el niño", "Crème brûlée", "Ærøskøbing", "sign in", "error", "配置",
         # what the tokenizer folds some of them to: an ASCII query word must still find them
         "naive", "cafe", "soren", "strasse", "lodz", "resume", "nino", "creme", "brulee", "aeroskobing", "x2", "file"]
TYPES = ["decision", "constraint", "note", "change", "turn"]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    s = MemoryStore.open(tmp_path / "memory.db", embeddings=False)
    yield s
    s.close()


def every_unit(conn: object, units: list[list[str]], rowids: object) -> list[list[str]]:
    return units


record_st = st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), st.sampled_from(TYPES),
                      st.sampled_from(["warm", "cold"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(record_st, min_size=1, max_size=30),
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=8),
       types=st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True))
def test_asking_only_about_held_units_gives_the_same_ranking(tmp_path_factory: pytest.TempPathFactory,
                                                            records: list[tuple[list[str], str, str]],
                                                            query: list[str], types: list[str]) -> None:
    store = MemoryStore.open(tmp_path_factory.mktemp("db") / "memory.db", embeddings=False)
    try:
        for i, (words, type_, layer) in enumerate(records):
            store.add(" ".join(words) + f" #{i}", type_, layer=layer, turn=i, merge=False, supersede=False, pinned=False)
        q = " ".join(query)
        pruned = store.lexical_search(q, layer="warm", type=types, limit=8)
        real = fts_tokens.units_held
        try:
            search.units_held = every_unit  # type: ignore[assignment]  # the control: every unit asked
            full = store.lexical_search(q, layer="warm", type=types, limit=8)
        finally:
            search.units_held = real
        assert [(r.id, r.score) for r in pruned] == [(r.id, r.score) for r in full]
    finally:
        store.close()


def test_units_no_filtered_record_holds_are_left_out(store: MemoryStore) -> None:
    store.add("We use PostgreSQL for the billing service", "decision", turn=1)
    for i in range(50):
        store.add(f"the parser cache retry loop {i} login", "turn", layer="cold", turn=2 + i, merge=False)
    units = search.cached_query_units("postgresql parser cache retry login", store.synonyms)
    ids = [int(r[0]) for r in store.conn.execute("SELECT id FROM records WHERE type = 'decision'")]
    held = fts_tokens.units_held(store.conn, units, ids)
    assert ["postgresql"] in held
    assert ["parser"] not in held and ["retry"] not in held  # only the cold turns say these
    assert [r.content for r in store.lexical_search("postgresql parser cache retry login", type="decision")] == [
        "We use PostgreSQL for the billing service"]


def test_an_ascii_word_finds_the_accented_one_the_tokenizer_folds(store: MemoryStore) -> None:
    store.add("Meet at the café near the naïve art museum", "decision", turn=1)
    store.add("Søren owns the Straße deploy", "decision", turn=2)
    for i in range(30):
        store.add(f"cold chatter {i}", "turn", layer="cold", turn=3 + i, merge=False)
    assert [r.turn for r in store.lexical_search("cafe naive", type="decision")] == [1]
    assert [r.turn for r in store.lexical_search("Søren", type="decision")] == [2]


def test_chinese_units_are_always_asked(store: MemoryStore) -> None:
    rid = store.add("缓存过期时间设为 60 秒", "decision", turn=1)
    units = [["用户"], ["缓存"], ["hello"]]
    assert fts_tokens.units_held(store.conn, units, [rid]) == [["用户"], ["缓存"]]


def test_an_expanded_query_is_remembered_until_the_synonyms_change() -> None:
    syn = Synonyms()
    before = search.cached_query_units("frobnicate the widget", syn)
    assert ["gizmo"] not in before
    syn.add_group(["widget", "gizmo"])
    assert ["gizmo"] in search.cached_query_units("frobnicate the widget", syn)


def test_every_ascii_token_sqlite_makes_of_any_character_is_among_the_row_tokens() -> None:
    """The tokenizer's Unicode tables are not Python's: over every character of the BMP (beside ASCII
    letters, at a word's start, inside it and at its end), whatever ASCII token SQLite makes of it is
    one that fts_tokens says the row may hold."""
    import sqlite3
    import unicodedata

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(b, tokenize='unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    docs = [f"zq{chr(cp)}zq {chr(cp)}zq Zq{chr(cp).upper()}" for cp in range(0x80, 0x10000)
            if unicodedata.category(chr(cp)) != "Cs"]
    conn.executemany("INSERT INTO t (rowid, b) VALUES (?, ?)", list(enumerate(docs)))
    made: dict[int, set[str]] = {}
    for rowid, term in conn.execute("SELECT doc, term FROM v"):
        if term.isascii():
            made.setdefault(rowid, set()).add(term)
    missed = []
    for rowid, doc in enumerate(docs):
        tokens = fts_tokens.row_tokens((doc.lower(), "", "", ""))
        if tokens is not None and not made.get(rowid, set()) <= tokens:
            missed.append((doc, made[rowid] - tokens))
    assert not missed, missed[:10]
