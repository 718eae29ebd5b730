"""Decisions at small windows: "let's use X", "switch to", 改用 … go into the ledger beside the requirements,
a later decision on the same subject supersedes the earlier one, and they survive compaction — the
request built after the messages that made them are compacted still holds the live ones."""

from __future__ import annotations

from ctxagent.context.builder.dispatch import build
from ctxagent.context.ledger import Ledger

from .ctx_helpers import Log, inputs, numbered_lines

DECISIONS = [
    ("Let's use NimbleCSV for the writer.", "NimbleCSV"),
    ("We'll use SQLite for the session store.", "SQLite for the session store"),
    ("决定用 Redis 做缓存。", "Redis 做缓存"),
    ("日志格式采用 JSON Lines。", "JSON Lines"),
]
CHANGES = [
    ("Actually, switch to a hand-written writer for the CSV instead of NimbleCSV.", "hand-written writer", "NimbleCSV for the writer"),
    ("缓存改用 Memcached，不用 Redis 做缓存了。", "Memcached", "决定用 Redis 做缓存"),
]


def _session() -> Log:
    log = Log()
    log.user("Build the exporter. Never touch the migrations folder. 不要修改配置文件。")
    for i, (text, _) in enumerate(DECISIONS):
        log.assistant(text)
        log.user(f"OK, go on with part {i}.")
        log.step("read_file", {"path": f"lib/part_{i}.ex"}, numbered_lines(400, f"part{i}"))
    for i, (text, _, _) in enumerate(CHANGES):
        log.user(text)
        log.step("read_file", {"path": f"lib/more_{i}.ex"}, numbered_lines(400, f"more{i}"))
    for t in range(12):  # enough later traffic that a small window compacts the turns that made the decisions
        log.user(f"Turn {t}: continue with module {t}.")
        log.step("read_file", {"path": f"lib/mod_{t}.ex"}, numbered_lines(300, f"mod{t}"))
        log.assistant(f"Module {t} done.")
    return log


def test_decisions_are_in_the_ledger_and_a_change_supersedes_en_and_zh() -> None:
    ledger = Ledger().feed(_session().events)
    texts = [d.text for d in ledger.decisions]
    assert any("hand-written writer" in t for t in texts) and not any("NimbleCSV for the writer" == t for t in texts)
    assert any("Memcached" in t for t in texts) and not any(t.startswith("决定用 Redis") for t in texts)
    assert any("SQLite for the session store" in t for t in texts) and any("JSON Lines" in t for t in texts)


def test_decisions_survive_compaction_at_a_small_window() -> None:
    log = _session()
    res = build(inputs(log, window=8_000, max_output=1024))
    assert res.compactions, "the small window compacts the early turns"
    for rec in res.compactions:
        log.add("compaction", **rec.data.to_data())
    again = build(inputs(log, window=8_000, max_output=1024))
    text = "\n".join(m.content for m in again.request.messages)
    for _, live in [DECISIONS[1], DECISIONS[3]]:
        assert live in text
    ledger_lines = [ln for ln in text.splitlines() if ln.startswith("- [turn")]
    for _, new, old in CHANGES:
        assert new in text  # the change is there ...
        assert not any(old in ln for ln in ledger_lines)  # ... and the decision it replaced is not shown as live
    assert "migrations folder" in text and "不要修改配置文件" in text
