"""Token counting works offline (bundled BPE files), in English and Chinese, and caches by content."""

from __future__ import annotations

import socket

import pytest
from ctxagent.context import tokens as tk
from ctxagent.context.request import Message, Request, ToolCall, ToolSpec
from ctxagent.context.tokens import (
    CachedCounter,
    HeuristicCounter,
    TiktokenCounter,
    count_message,
    count_request,
    get_counter,
)


@pytest.fixture
def no_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("sockets are forbidden in this test")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.parametrize("family", ["o200k_base", "cl100k_base"])
def test_tiktoken_loads_from_bundle_without_network(family: str, no_sockets: None, tmp_path, monkeypatch) -> None:
    # an empty cache dir proves nothing was fetched into tiktoken's cache either
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    tk.load_encoding.cache_clear()
    counter = TiktokenCounter(family)
    assert counter.name == family
    assert counter.count("hello world") == 2
    assert counter.count("") == 0
    zh = counter.count("不要修改配置文件")
    assert 2 <= zh <= 10
    assert list(tmp_path.iterdir()) == []


def test_counts_match_tiktoken_reference() -> None:
    counter = TiktokenCounter("cl100k_base")
    # a well-known cl100k count
    assert counter.encode("tiktoken is great!") == [83, 1609, 5963, 374, 2294, 0]
    assert counter.decode(counter.encode("中文和English混合")) == "中文和English混合"


def test_special_token_text_is_counted_not_rejected() -> None:
    counter = get_counter("o200k_base")
    assert counter.count("<|endoftext|>") > 1


def test_huge_unbroken_text_is_counted() -> None:
    counter = get_counter("o200k_base")
    n = counter.count("a" * 200_000)
    assert 10_000 < n < 200_000
    assert counter.count("word " * 10_000) == pytest.approx(10_000, rel=0.05)


def test_hash_mismatch_falls_back_to_heuristic(monkeypatch: pytest.MonkeyPatch) -> None:
    tk.load_encoding.cache_clear()
    monkeypatch.setitem(tk.ENCODINGS, "o200k_base", {**tk.ENCODINGS["o200k_base"], "sha256": "0" * 64})
    try:
        with pytest.raises(ValueError, match="sha256"):
            tk.load_encoding("o200k_base")
        assert isinstance(get_counter("o200k_base"), HeuristicCounter)
    finally:
        tk.load_encoding.cache_clear()


def test_unknown_family_is_heuristic() -> None:
    assert isinstance(get_counter("heuristic"), HeuristicCounter)
    assert isinstance(get_counter("no-such-encoding"), HeuristicCounter)


def test_heuristic_rules() -> None:
    h = HeuristicCounter()
    assert h.count("abcd" * 10) == 10  # 40 chars ÷ 4
    assert h.count("不要修改配置文件") == 6  # 8 CJK ÷ 1.5 = 5.33 → 6
    assert h.count('{"a":1}') == 2 + 4  # 7 chars ÷ 4 = 1.75, plus 4 marks { " " } → 5.75 → 6
    assert HeuristicCounter(safety=3.0).count("abcd" * 10) == 30
    with pytest.raises(ValueError):
        HeuristicCounter(safety=0)


def test_chinese_costs_more_per_char_than_english() -> None:
    zh = "我们决定使用数据库而不是文件存储，不要修改配置文件。" * 20
    en = "We decided to use the database instead of file storage; do not modify config files. " * 20
    for counter in (get_counter("o200k_base"), get_counter("cl100k_base"), HeuristicCounter()):
        assert counter.count(zh) / len(zh) > 2 * counter.count(en) / len(en), counter.name


class CountingCounter:
    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return len(text)


def test_cached_counter_costs_only_new_content() -> None:
    inner = CountingCounter()
    cached = CachedCounter(inner, max_entries=3)
    texts = ["a" * 100, "b" * 100, "短文本"]
    for _ in range(5):
        for t in texts:
            assert cached.count(t) == len(t)
    assert inner.calls == 3
    assert cached.hits == 12
    cached.count("c" * 100)  # evicts the least recently used
    cached.count("a" * 100)
    assert inner.calls == 5
    assert cached.count("") == 0


def test_count_message_and_request_add_overhead() -> None:
    c = get_counter("o200k_base")
    plain = Message("user", "hello")
    assert count_message(plain, c) == c.count("hello") + tk.MESSAGE_OVERHEAD
    call = Message("assistant", "", tool_calls=[ToolCall("id1", "read_file", {"path": "a.py"})])
    assert count_message(call, c) > tk.MESSAGE_OVERHEAD + tk.TOOL_CALL_OVERHEAD
    spec = ToolSpec("read_file", "Read a file", {"type": "object"})
    req = Request("sys", [plain, call], [spec])
    assert count_request(req, c) == (
        tk.REQUEST_OVERHEAD + tk.count_system("sys", c) + tk.count_tool_spec(spec, c) + count_message(plain, c) + count_message(call, c)
    )
