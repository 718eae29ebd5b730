"""Decisions at small windows: "let's use X", "switch to", 改用 … go into the ledger beside the requirements,
a later decision on the same subject supersedes the earlier one, and they survive compaction — the
request built after the messages that made them are compacted still holds the live ones."""

from __future__ import annotations

from ctxagent.context.builder.dispatch import build
from ctxagent.context.compact import extractive_summary
from ctxagent.context.history import view
from ctxagent.context.language.detect import detect_decisions, document_lines
from ctxagent.context.language.provenance import Author
from ctxagent.context.ledger import USER_CONSTRAINTS_HEAD, Ledger, result_facts

from .ctx_helpers import Log, counter, inputs, numbered_lines

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


# -- the agent's own decisions --------------------------------------------------------------------------
OWN = [
    "Expected — I'll use that alias in the next edits.",
    "Given the PR description, I will stick to the writer fix.",
    "We're going to go with the streaming parser for the importer.",
    "我们就用 SQLite 做会话存储。",
    "这里我改用 JSON Lines 格式。",
]
STEP_PLANS = [
    "I'll use `sed` to replace the `write` method.",
    "I'll use a python script to overwrite the file content.",
    "I'll use `connection.queries` to check if a query was made.",
    "Let me read the exporter first.",
    "我用 grep 查找调用的地方。",
    "我用命令看看测试结果。",
    "Should I use SQLite for the store?",
]


def test_the_agents_own_decisions_are_detected_but_not_the_means_of_its_next_step_en_and_zh() -> None:
    for text in OWN:
        assert detect_decisions(text) == [text], text
    for text in STEP_PLANS:
        assert detect_decisions(text) == [], text


def _own_session() -> Log:
    log = Log()
    log.user("Let's use Postgres for the session store. Fix the exporter.")
    log.assistant("I'll stick with the v1 schema for the exporter.")
    log.assistant("我们就用 JSON Lines 做导出格式。")
    log.assistant("Postgres is not installed here, so I'll switch to SQLite for the session store.")
    log.step("read_file", {"path": "lib/export.ex"}, numbered_lines(400, "export"))
    log.assistant("The v1 schema lacks the id column: I'll move to the v2 schema for the exporter instead.")
    log.assistant("导出格式改用 CSV，不用 JSON Lines 了。")
    for t in range(12):
        log.user(f"Turn {t}: continue with module {t}.")
        log.step("read_file", {"path": f"lib/mod_{t}.ex"}, numbered_lines(300, f"mod{t}"))
        log.assistant(f"Module {t} done.")
    return log


def test_the_agents_decisions_are_the_models_never_binding_and_superseded_by_its_later_ones() -> None:
    ledger = Ledger().feed(_own_session().events)
    by = {d.text: d for d in ledger.decisions}
    v2 = "The v1 schema lacks the id column: I'll move to the v2 schema for the exporter instead."
    assert by[v2].author is Author.MODEL and not by[v2].binding
    assert "I'll stick with the v1 schema for the exporter." not in by  # superseded by the agent's own change
    assert "导出格式改用 CSV，不用 JSON Lines 了。" in by and "我们就用 JSON Lines 做导出格式。" not in by
    # the agent's switch does not erase the user's own decision: both stay, each with its author
    user = "Let's use Postgres for the session store."
    assert by[user].author is Author.USER
    assert by["Postgres is not installed here, so I'll switch to SQLite for the session store."].author is Author.MODEL
    tail = ledger.tail_block(4000, counter())
    assert f"the model] {v2}" in tail and f"the user] {user}" in tail
    binding = tail.split(USER_CONSTRAINTS_HEAD)[1].split("Decisions")[0] if USER_CONSTRAINTS_HEAD in tail else ""
    assert v2 not in binding and "SQLite" not in binding


def test_the_agents_decisions_survive_compaction_at_a_small_window() -> None:
    log = _own_session()
    res = build(inputs(log, window=8_000, max_output=1024))
    assert res.compactions, "the small window compacts the early turns"
    for rec in res.compactions:
        log.add("compaction", **rec.data.to_data())
    again = build(inputs(log, window=8_000, max_output=1024))
    text = "\n".join(m.content for m in again.request.messages)
    assert "I'll move to the v2 schema for the exporter instead." in text
    assert "导出格式改用 CSV" in text and "so I'll switch to SQLite for the session store." in text
    live = [ln for ln in text.splitlines() if ln.startswith("- [turn") or ln.startswith("[turn")]
    assert not any("I'll stick with the v1 schema" in ln for ln in live)
    assert not any("我们就用 JSON Lines" in ln for ln in live)


def test_the_extractive_summary_keeps_the_users_decision_beside_the_agents_switch() -> None:
    log = _own_session()
    summary = extractive_summary(view(log.events[:8]))
    decisions = summary.split("Decisions:")[1].split("Constraints:")[0]
    assert "by the user] Let's use Postgres for the session store." in decisions
    assert "by the model] Postgres is not installed here, so I'll switch to SQLite" in decisions
    assert "v2 schema" in decisions and "v1 schema for the exporter." not in decisions.replace("v1 schema lacks", "")
    assert "导出格式改用 CSV" in decisions and "我们就用 JSON Lines" not in decisions
    # the user's own later decision does replace the user's earlier one
    log2 = Log()
    log2.user("Let's use Postgres for the session store.")
    log2.user("Actually, switch to SQLite for the session store.")
    decisions2 = extractive_summary(view(log2.events)).split("Decisions:")[1].split("Constraints:")[0]
    assert "SQLite" in decisions2 and "Postgres" not in decisions2


SPEC = """# Design notes
We decided to keep the exporter a pure function of the rows.
Use `--verbose` to see every row the exporter writes.
存储层改用 SQLite，不再使用 Postgres。
```python
use_postgres = False  # we'll use sqlite
```
"""


def test_decisions_a_document_states_are_quoted_with_its_requirements_en_and_zh() -> None:
    assert document_lines(SPEC) == ["We decided to keep the exporter a pure function of the rows.",
                                    "存储层改用 SQLite，不再使用 Postgres。"]  # not the how-to imperative, not the code
    log = Log()
    log.user("Implement the design.")
    args = {"path": "docs/DESIGN.md"}
    log.step("read_file", args, SPEC, meta=result_facts("read_file", args, SPEC))
    (quote,) = Ledger().feed(log.events).quotes
    assert "存储层改用 SQLite，不再使用 Postgres。" in quote.lines
    assert not Ledger().feed(log.events).decisions  # quoted data, never a decision of the session
