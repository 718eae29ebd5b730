"""MemoryStore on real SQLite files: records, search, merge, supersede, aging, forget, provenance."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from ctxagent.context.errors import MemoryStoreError
from ctxagent.context.language.terms import build_match, terms
from ctxagent.context.memory import MemoryStore
from ctxagent.context.memory.schema import SCHEMA_VERSION


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    s = MemoryStore.open(tmp_path / ".ctxagent" / "memory.db")
    yield s
    s.close()


def test_open_creates_wal_db_at_schema_version(tmp_path: Path) -> None:
    path = tmp_path / ".ctxagent" / "memory.db"
    MemoryStore.open(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # reopening an up-to-date database migrates nothing and keeps the data
    s = MemoryStore.open(path)
    rid = s.add("hello world", "note")
    s.close()
    assert MemoryStore.open(path).get(rid).content == "hello world"


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.close()
    with pytest.raises(MemoryStoreError, match="newer"):
        MemoryStore.open(path)


def test_record_fields_defaults_and_validation(store: MemoryStore) -> None:
    rid = store.add("Never commit secrets", "constraint", session="s1", turn=2, tags=["security"], source_events=[7])
    rec = store.get(rid)
    assert (rec.type, rec.layer, rec.pinned, rec.turn, rec.session, rec.source_events) == ("constraint", "warm", True, 2, "s1", [7])
    assert rec.confirmations == 1 and rec.superseded_by is None and rec.created_at > 0
    todo = store.get(store.add("write the migration", "todo"))
    assert todo.status == "open" and not todo.pinned
    with pytest.raises(MemoryStoreError):
        store.add("x", "opinion")
    with pytest.raises(MemoryStoreError):
        store.add("x", "note", layer="hot")
    with pytest.raises(MemoryStoreError):
        store.add("   ", "note")


def test_seed_mysql_then_postgresql(store: MemoryStore) -> None:
    """Seed 001 §4.3: "use MySQL" at turn 3, "use PostgreSQL" at turn 10 → only PostgreSQL is current."""
    old = store.add("Use MySQL for the database.", "decision", session="s", turn=3)
    new = store.add("Use PostgreSQL for the database instead.", "decision", session="s", turn=10)
    assert store.get(old).superseded_by == new
    current = store.search("which database do we use")
    assert [r.id for r in current] == [new]
    history = store.search("database", include_superseded=True)
    assert {r.id for r in history} == {old, new}
    assert [r.id for r in store.history(new)] == [old, new]


def test_unrelated_decisions_and_constraints_do_not_supersede(store: MemoryStore) -> None:
    a = store.add("Use PostgreSQL for the database.", "decision", turn=1)
    b = store.add("Use pytest for the test suite.", "decision", turn=2)
    c = store.add("Don't modify config files.", "constraint", turn=1)
    d = store.add("Never modify the tests.", "constraint", turn=2)
    assert all(store.get(i).current for i in (a, b, c, d))


def test_late_older_statement_is_born_superseded(store: MemoryStore) -> None:
    new = store.add("Use PostgreSQL for the database.", "decision", session="s", turn=10)
    late = store.add("Use MySQL for the database, as decided early on.", "decision", session="s", turn=3)
    assert store.get(late).superseded_by == new and store.get(new).current


def test_explicit_supersede_and_forget(store: MemoryStore) -> None:
    a = store.add("Cache results in Redis", "decision", turn=1)
    b = store.add("Keep everything in process memory", "decision", turn=2)
    assert store.get(a).current  # no shared subject: no automatic supersede
    store.supersede(a, b)
    assert store.get(a).superseded_by == b
    with pytest.raises(MemoryStoreError):
        store.supersede(a, 999)
    assert store.forget(b) is True
    assert store.get(b) is None and store.get(a).current  # the replaced record is current again
    assert store.forget(b) is False
    assert store.search("process memory") == []


def test_near_duplicates_merge_with_confirmations(store: MemoryStore) -> None:
    a = store.add("Always run ruff before committing", "constraint", session="s", turn=1, source_events=[1])
    b = store.add("always run  ruff before committing!", "constraint", session="s", turn=4, source_events=[9])
    assert a == b
    rec = store.get(a)
    assert rec.confirmations == 2 and rec.source_events == [1, 9] and rec.last_turn == 4 and rec.turn == 1
    assert store.stats()["total"] == 1


def test_repeating_a_superseded_decision_makes_it_current_again(store: MemoryStore) -> None:
    my = store.add("Use MySQL for the database.", "decision", session="s", turn=3)
    pg = store.add("Use PostgreSQL for the database.", "decision", session="s", turn=10)
    again = store.add("Use MySQL for the database.", "decision", session="s", turn=12)
    assert again == my
    assert store.get(my).current and store.get(pg).superseded_by == my


def test_search_filters(store: MemoryStore) -> None:
    c1 = store.add("edited src/auth/login.py lines 3-7", "change", files=["src/auth/login.py"], turn=2)
    store.add("edited src/db.py lines 1-2", "change", files=["./src/db.py"], turn=5)
    n = store.add("login tests pass", "note", turn=6, layer="cold")
    assert {r.id for r in store.search("login")} == {c1, n}
    assert [r.id for r in store.search("login", type="change")] == [c1]
    assert [r.id for r in store.search("login", layer="cold")] == [n]
    assert [r.id for r in store.search("login", turns=(1, 3))] == [c1]
    assert [r.id for r in store.search("edited", file="login.py")] == [c1]
    assert [r.id for r in store.search("", file="src/auth/login.py")] == [c1]
    assert [r.content for r in store.search("", file="src/db.py")] == ["edited src/db.py lines 1-2"]
    assert store.search("zzzz-nothing") == []


def test_code_tokenization_camel_snake_paths(store: MemoryStore) -> None:
    rid = store.add("fixed getUserName in user_service.py", "change")
    for q in ("get user name", "getUserName", "user service", "user_service", "userservice", "user_service.py"):
        assert [r.id for r in store.search(q)] == [rid], q
    snake = store.add("renamed user_name to login", "change")
    assert [r.id for r in store.search("username")] == [snake]
    assert "getusername" in terms("getUserName") and "user" in terms("user_name")


def test_chinese_query_finds_record_through_bigrams_and_synonyms(store: MemoryStore) -> None:
    """Seed 001 §4.1: "改一下登录逻辑" must find a record about authentication."""
    zh = store.add("用户登录使用 JWT 令牌", "decision", turn=2)
    en = store.add("User authentication uses JWT tokens", "decision", turn=3)
    store.add("The footer colour is blue", "note", turn=4)
    assert zh in [r.id for r in store.search("登录逻辑")]
    assert {r.id for r in store.search("改一下登录逻辑")} >= {zh, en}  # 登录 ↔ auth via the synonym table
    assert zh in [r.id for r in store.search("how does sign in work")]
    assert "登录" in build_match("登录逻辑")


def test_user_extended_synonyms(tmp_path: Path) -> None:
    (tmp_path / ".ctxagent").mkdir()
    (tmp_path / ".ctxagent" / "config.toml").write_text('synonyms = [["frobnicate", "widgetize"]]\n', encoding="utf-8")
    s = MemoryStore.open_project(tmp_path)
    rid = s.add("we widgetize the input first", "note")
    assert [r.id for r in s.search("frobnicate")] == [rid]
    s2 = MemoryStore.open(tmp_path / "other.db", synonyms=[["alpha", "beta"]])
    rid2 = s2.add("beta release", "note")
    assert [r.id for r in s2.search("alpha")] == [rid2]


def test_aging_moves_old_warm_records_to_cold_but_keeps_pins_and_todos(store: MemoryStore) -> None:
    note = store.add("looked at the parser", "note", session="s", turn=1)
    pin = store.add("Never touch the vendor folder", "constraint", session="s", turn=1)
    todo = store.add("add retries", "todo", session="s", turn=1)
    recent = store.add("parser handles unicode", "note", session="s", turn=15)
    assert store.age(20) == 0  # 20 − 20 = 0: nothing is old enough
    assert store.age(25) == 1
    assert store.get(note).layer == "cold"
    assert {store.get(i).layer for i in (pin, todo, recent)} == {"warm"}
    assert store.search("parser", layer="cold")[0].id == note  # cold is still searchable
    assert store.get(note) is not None  # nothing deleted


def test_secrets_are_redacted_before_storage(store: MemoryStore) -> None:
    key = "sk-ant-api03-" + "A" * 40
    rid = store.add(f"remember the key is {key}", "note")
    assert key not in store.get(rid).content and "[redacted]" in store.get(rid).content
    raw = Path(store.path).read_bytes() + (Path(str(store.path) + "-wal").read_bytes() if Path(str(store.path) + "-wal").exists() else b"")
    assert key.encode() not in raw


def test_search_is_deterministic_and_stats(store: MemoryStore) -> None:
    for i in range(20):
        store.add(f"note {i} about the cache layer", "note", turn=i)
    first = [r.id for r in store.search("cache layer", limit=8)]
    assert first == [r.id for r in store.search("cache layer", limit=8)]
    st = store.stats()
    assert st["total"] == 20 and st["by_type"] == {"note": 20} and st["schema_version"] == SCHEMA_VERSION


def test_user_level_store_lives_in_ctxagent_home(tmp_path: Path, _isolated_home: Path) -> None:
    s = MemoryStore.open_user()
    s.add("prefer type hints everywhere", "constraint")
    assert s.scope == "user" and Path(s.path).parent == _isolated_home
    assert (_isolated_home / "memory.db").exists()


def test_large_store_query_split_keeps_rare_and_recent_hits(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over the posting budget a query runs as rare-terms-everywhere + all-terms-over-recent records."""
    from ctxagent.context.memory import search

    rare = store.add("the flaky websocket reconnect in src/net/socket.py", "note", turn=1)
    for i in range(40):
        store.add(f"edited src/app/module_{i}.py for the handler", "change", turn=2 + i)
    newest = store.add("edited src/net/socket.py handler", "change", turn=50)
    exact = [r.id for r in store.search("websocket handler in src", limit=5)]
    monkeypatch.setattr(search, "POSTING_BUDGET", 5)
    monkeypatch.setattr(search, "RECENT_WINDOW", 3)
    split = [r.id for r in store.search("websocket handler in src", limit=5)]
    assert rare in split and newest in split
    assert rare in exact


def test_term_statistics_backfill_matches_incremental_counts(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    s = MemoryStore.open(path)
    for text in ("alpha beta", "beta gamma", "gamma delta_epsilon", "用户登录"):
        s.add(text, "note", merge=False)
    gone = s.add("beta only once", "note")
    s.forget(gone)
    before = dict(s.conn.execute("SELECT term, df FROM term_df WHERE df > 0").fetchall())
    s.conn.execute("UPDATE meta SET value = 'pending' WHERE key = 'term_df_backfill'")
    s.conn.execute("DELETE FROM term_df")
    s.close()
    again = MemoryStore.open(path)
    assert dict(again.conn.execute("SELECT term, df FROM term_df WHERE df > 0").fetchall()) == before
    assert before["beta"] == 2 and before["用户"] == 1


def test_a_long_query_keeps_its_rarest_held_terms(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over MAX_QUERY_UNITS held units a query asks FTS5 about the rarest ones only (and those no
    record holds): the record holding the rare words is found, a record holding only a dropped
    common word is not; English and Chinese alike."""
    from ctxagent.context.memory import search
    from ctxagent.context.memory.search import cached_query_units, selective, term_dfs

    for i in range(6):
        store.add(f"handler config update number {i} 处理", "note", turn=1 + i, merge=False)
    rare = store.add("websocket reconnect 重连 handler", "note", turn=10)
    common_only = store.add("config only", "note", turn=11)
    query = "websocket reconnect 重连 handler config update zebraword"
    units = cached_query_units(query, None)
    dfs = term_dfs(store.conn, sorted({t for u in units for t in u}))
    unit_df = [sum(dfs.get(t, 0) for t in u) for u in units]
    monkeypatch.setattr(search, "MAX_QUERY_UNITS", 3)
    kept, kept_df = selective(units, unit_df)
    assert [u[0] for u in kept] == ["websocket", "reconnect", "重连", "zebraword"]  # query order, df 0 kept
    assert kept_df == [1, 1, 1, 0]
    found = [r.id for r in store.lexical_search(query, limit=10)]  # no relevance floor: every match
    assert found == [rare]
    monkeypatch.setattr(search, "MAX_QUERY_UNITS", 48)
    assert selective(units, unit_df) == (units, unit_df)
    assert common_only in [r.id for r in store.lexical_search(query, limit=10)]


@pytest.mark.parametrize(("user_said", "model_said"), [
    ("Use PostgreSQL for the database.", "Use SQLite for the database instead."),
    ("数据库我们用 PostgreSQL。", "数据库改用 SQLite。"),
])
def test_the_models_decision_never_replaces_the_users(store: MemoryStore, user_said: str, model_said: str) -> None:
    # the one supersession rule (provenance.may_replace): only the user replaces what the user wrote
    users = store.add(user_said, "decision", session="s", turn=1, provenance="user")
    models = store.add(model_said, "decision", session="s", turn=5, provenance="model")
    assert store.get(users).current and store.get(models).current  # type: ignore[union-attr]
    again = store.add(model_said.replace("SQLite", "MySQL"), "decision", session="s", turn=6, provenance="user")
    assert store.get(models).superseded_by == again  # type: ignore[union-attr]
    assert store.get(users).superseded_by == again  # type: ignore[union-attr]
