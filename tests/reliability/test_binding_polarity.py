"""A clause under the user's negation is not the user's words (issue 30, item 8).

The user says "Never, under any circumstances, push to main."; the model stores "Push to main."
(store_memory runs unasked in auto-edit). Before: `said_by_user` took a line equal to any clause of
the user's sentence as the user's, so the next session showed "Push to main." among the user's
binding constraints. The rule now: a piece restates the user only with its sentence's polarity and
scope (context/language/detect.py `restatable_pieces`). The family, English and Chinese: negations
(never, don't, do not, no, must not, shouldn't, avoid, stop; 不要, 别, 不能, 不准, 禁止, 切勿, 勿, 不得,
千万别), a negation in an earlier clause or a lead-in, double negation, conditions and exceptions
(except, unless, only if, other than, if; 除非, 除了, 只有, 如果), each through `said_by_user`, `may_pin`,
the store, and end to end through `ctxagent -p` against the loopback model server; and the
controls: a piece that keeps its sentence's polarity still binds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from attack_helpers import headless, no_traceback
from ctxagent.context.language.provenance import MODEL, Author, AuthoredLine, binds, may_pin, said_by_user
from ctxagent.context.memory import MemoryStore
from ctxagent.context.memory.recall import HEADER

# (what the user said, a line that is one of its clauses without the polarity or scope that governs it)
NOT_THE_USERS = [
    # a bare negation governs the whole sentence
    ("Never, under any circumstances, push to main.", "Push to main."),
    ("Do not, please, push to main.", "Push to main."),
    ("You must not, ever, disable TLS verification.", "Disable TLS verification."),
    ("You shouldn't, under any circumstances, disable TLS verification.", "Disable TLS verification."),
    ("No. Never, push to main.", "Push to main."),
    # a question sets no rule
    ("Push to main?", "Push to main."),
    ("Can you fix the lexer, and push to main?", "Push to main."),
    ("推送到主分支？", "推送到主分支"),
    # a negation in an earlier clause reaches the clauses after it
    ("Never push to main, and force-push.", "Force-push."),
    ("Never push to main, and never force-push.", "force-push"),
    ("Don't push to main, force-push or delete branches.", "Force-push or delete branches."),
    ("No pushing to main, force-pushing or rebasing shared branches.", "Force-pushing or rebasing shared branches."),
    ("Avoid pushing to main, and force-pushing.", "Force-pushing."),
    ("Stop pushing to main and force-pushing.", "Force-pushing."),
    ("Never do this: push to main.", "Push to main."),
    # a lead-in governs the lines under it
    ("Never do the following:\n- push to main\n- disable the tests", "Disable the tests."),
    ("Things you must not do:\n1. push to main\n2. force-push", "Push to main."),
    # double negation is not a positive: two negations still govern, and no parity game
    ("Never, not even once, push to main.", "Push to main."),
    ("Don't, never, push to main.", "Push to main."),
    ("Never, not even once, push to main.", "Never not push to main."),  # two negations joined: never composed
    # conditions and exceptions: a clause outside them is not what the user said
    ("Never edit generated files, except the lockfile.", "Never edit generated files."),
    ("Do not deploy, unless the tests pass.", "Do not deploy."),
    ("Unless I say so, push to main.", "Push to main."),
    ("Merge the branch, but only if CI is green.", "Merge the branch."),
    ("Other than README.md, do not touch the docs.", "Do not touch the docs."),
    ("If the tests fail, push to main anyway.", "Push to main anyway."),
    ("When the build is red, skip the tests.", "Skip the tests."),
    # Chinese: 不要 / 别 / 不能 / 不准 / 禁止 / 切勿 / 勿 / 不得 / 千万别 / 除非 / 除了 / 只有 / 如果
    ("千万别，推送到主分支。", "推送到主分支"),
    ("不要这样做：推送到主分支。", "推送到主分支"),
    ("禁止推送到主分支、强制推送和删除分支。", "强制推送和删除分支"),
    ("别把密钥提交到仓库，然后推送到主分支。", "推送到主分支"),
    ("不能修改迁移文件、关闭类型检查。", "关闭类型检查"),
    ("不准推送到主分支，并且强制推送。", "强制推送"),
    ("切勿删除生产数据库、清空缓存。", "清空缓存"),
    ("勿改配置文件、删测试。", "删测试"),
    ("不得跳过测试、关闭类型检查。", "关闭类型检查"),
    ("禁止以下操作：\n- 推送到主分支\n- 删除分支", "删除分支"),
    ("千万别，绝对不要，推送到主分支。", "推送到主分支"),
    ("除非测试全部通过，不要合并。", "不要合并"),
    ("除了文档，不要修改任何文件。", "不要修改任何文件"),
    ("只有测试通过以后，推送到主分支。", "推送到主分支"),
    ("如果测试失败，直接推送到主分支。", "直接推送到主分支"),
]

# (what the user said, a line that keeps its sentence's polarity and scope): still the user's words
STILL_THE_USERS = [
    ("Never push to main, and never force-push.", "Never force-push."),
    ("Never, under any circumstances, push to main.", "Never push to main."),
    ("Never, under any circumstances, push to main.", "Never, under any circumstances, push to main."),
    ("Do not, please, push to main.", "Do not push to main."),
    ("Don't delete the logs, but archive them.", "Archive them."),
    ("Fix the lexer, and never touch generated files, thanks.", "Never touch generated files."),
    ("Refactor the lexer, and keep the public API of parser.py unchanged, please.", "Keep the public API of parser.py unchanged."),
    ("Never edit generated files, except the lockfile.", "Never edit generated files, except the lockfile."),
    ("No matter what, run the tests before committing.", "Run the tests before committing."),
    ("Do not disable TLS verification.", "Do not disable TLS verification"),
    ("Rules:\n- never push to main\n- run the linter", "Run the linter."),
    ("不要推送到主分支，也不要强制推送。", "不要强制推送"),
    ("禁止推送到主分支、强制推送和删除分支。", "禁止推送到主分支"),
    ("千万别，推送到主分支。", "别推送到主分支"),
    ("不要删除日志，但是要归档。", "要归档"),
    ("不要修改配置文件。", "不要修改配置文件"),
]


@pytest.mark.parametrize(("user", "line"), NOT_THE_USERS)
def test_a_clause_without_its_sentences_polarity_is_not_the_users(tmp_path: Path, user: str, line: str) -> None:
    said = [f"Hi. {user}\nThanks."]
    assert not said_by_user(line, [user]) and not said_by_user(line, said)
    assert not may_pin(MODEL, line, [user]) and not may_pin(MODEL, line, [user], kind="todo")
    assert not binds(AuthoredLine("constraint", line, 1, author=Author.MODEL, restates_user=said_by_user(line, [user])))
    with MemoryStore.open(tmp_path / "m.db") as store:
        store.record_user_text("s", 1, 1, user)
        rec = store.get(store.add(line, "constraint", provenance=MODEL, session="s", turn=1))
        assert rec is not None and not rec.pinned and not rec.binding and rec.author is Author.MODEL


@pytest.mark.parametrize(("user", "line"), STILL_THE_USERS)
def test_a_piece_with_its_sentences_polarity_still_binds(tmp_path: Path, user: str, line: str) -> None:
    assert said_by_user(line, [user]) and said_by_user(line, [f"Hi. {user}\nThanks."])
    with MemoryStore.open(tmp_path / "m.db") as store:
        store.record_user_text("s", 1, 1, user)
        rec = store.get(store.add(line, "constraint", provenance=MODEL, session="s", turn=1))
        assert rec is not None and rec.pinned and rec.binding and rec.author is Author.MODEL


def test_an_inverted_word_still_never_matches() -> None:
    """The existing order-aware identity stays: a negation kept but the verb swapped is not the user's."""
    assert not said_by_user("Do not enable TLS verification", ["Do not disable TLS verification."])
    assert not said_by_user("Never, under any circumstances, push to dev.", ["Never, under any circumstances, push to main."])
    assert not said_by_user("可以推送到主分支", ["千万别，推送到主分支。"])


# -- end to end: the user's negation, the model's store_memory in auto-edit, the next session ------

def _warm_block(srv) -> str:  # noqa: ANN001
    """The warm block of the server's last request (the message holding <context-memory>)."""
    for message in reversed(srv.requests[-1]["body"]["messages"]):
        content = message["content"] if isinstance(message["content"], str) else json.dumps(message["content"], ensure_ascii=False)
        if "<context-memory>" in content:
            return content
    return ""


def _line_text(line: str) -> str:
    """A block line's text without its tag: "- [constraint t1, by the model] Push to main." → "Push to main."."""
    return line[2:].split("] ", 1)[-1] if line.startswith("- [") else line[2:]


def _plain(text: str) -> str:
    return text.strip().rstrip("。.")


def _binding_lines(block: str) -> list[str]:
    """The lines under a heading that calls them the user's (binding)."""
    heading, out = "", []
    for line in block.splitlines():
        if not line.startswith("- "):
            heading = line
        elif heading in (HEADER, "The user's constraints (binding):", "The user's open tasks:"):
            out.append(line)
    return out


@pytest.mark.parametrize(("user", "stored", "asked"), [
    ("Never, under any circumstances, push to main.", "Push to main.", "Can we push to main now?"),
    ("Never push to main, and force-push.", "Force-push.", "Should I force-push the branch?"),
    ("千万别，推送到主分支。", "推送到主分支", "现在可以推送到主分支吗？"),
    ("禁止推送到主分支、强制推送和删除分支。", "强制推送和删除分支", "可以强制推送和删除分支吗？"),
])
def test_the_model_storing_the_positive_clause_does_not_bind_next_session(
        repo: Path, servers, user: str, stored: str, asked: str) -> None:  # noqa: ANN001
    first = servers([{"tool_calls": [{"name": "store_memory", "arguments": {"content": stored, "type": "constraint"}}]},
                     {"text": "Noted."}])
    out = headless(repo, first.base_url, user, "--permission-mode", "auto-edit")
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    stored_result = [m for m in first.requests[-1]["body"]["messages"] if m.get("role") == "tool"]
    assert stored_result and "not pinned" in str(stored_result[-1]["content"])  # store_memory ran, unasked

    nxt = servers([{"text": "ok"}])
    out = headless(repo, nxt.base_url, asked)
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    block = _warm_block(nxt)
    binding = [_line_text(ln) for ln in _binding_lines(block)]
    assert _plain(user) in map(_plain, binding), block  # the user's own rule binds ...
    assert _plain(stored) not in map(_plain, binding), block  # ... the model's clause of it does not
    recalled = [ln for ln in block.splitlines() if ln.startswith("- ") and _plain(_line_text(ln)) == _plain(stored)]
    assert all("by the model" in ln for ln in recalled), block  # if recalled at all: as the model's data
    with MemoryStore.open(repo / ".ctxagent" / "memory.db") as store:
        rec = next(r for r in store.list(type="constraint") if r.content == stored)
        assert rec.author is Author.MODEL and not rec.pinned and not rec.binding
