"""Who wrote a remembered line, and the one rule for when a line binds.

Every remembered line — a memory record, a ledger pin (constraint, task, decision, failing test), a
summary's section item, a line recalled into the warm block — is an `AuthoredLine`: its text, its
kind and its `Author`. Text the model read (a file, a web page, a tool's output) can carry
instructions, and the model — or a model summarizing the conversation — can write them down as a
constraint or a to-do. So exactly one function, `binds`, decides what is shown as binding, and it
says: **only the user's words bind**.

- written by the user (a user turn, /remember, `ctxagent memory add`): binding when it is a
  constraint or an open task;
- written by anyone else (the model's store_memory or its own text, an outside agent over MCP, a
  compaction summary, tool output, an imported file, a sub-agent): stored, searchable, shown as
  quoted data *with its author* — never binding, never under a heading that says "the user's" —
  unless its words are the user's own (`said_by_user`: near-identical to a sentence or clause the
  user typed, with that sentence's polarity and scope). A constraint the model stores in the user's
  exact words binds like the user's.

`said_by_user` is order-aware near-identity, not a bag of words: both sides are reduced to token
sequences (case, punctuation, contractions, articles and politeness words, light inflection are
normalised away; negations, modals and every other word are kept, in order) and must be equal.
"Do not enable TLS verification" is not "Do not disable TLS verification", "要…" is not "不要…".
A paraphrase that changes a word does not match; that costs little: the user's own sentence is
pinned from the user's turn anyway, and the other line is still stored and found by search.

A clause restates the user only with the polarity and scope of its sentence
(detect.restatable_pieces): "Push to main." is a clause of "Never, under any circumstances, push to
main." but not the user's words — "Never push to main." is. A negation reaches the clauses after it
("Never push to main, and force-push": not "Force-push", but "…, and never force-push" is the user's
"Never force-push"), a lead-in reaches the lines under it ("Never do the following:"), a condition or
an exception the whole sentence ("except …", "unless …", "if …", 除非, 除了, 只有, 如果), a contrast
ends a negation's reach ("but archive them"), and a question sets no rule.

The ledger (context/ledger.py), the warm block (context/builder/warm.py), memory recall
(recall.py), the store (store.py: `pinned`), the model's memory tools and the MCP server all read
authorship and bindingness from here.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache

from ctxagent.context.language.detect import QUESTION_END, restatable_pieces
from ctxagent.context.language.terms import stem


class Author(StrEnum):
    """Who wrote a line. The values are what the memory database stores (`records.provenance`)."""

    USER = "user"  # the user's own words: a user turn, /remember, `ctxagent memory add`
    MODEL = "model"  # the model: store_memory, or decisions and to-dos read off its replies
    TOOL = "tool"  # a tool's output: a change, test counts, failing tests
    SUMMARY = "summary"  # a compaction summary (a model's or the extractive one)
    MCP = "mcp"  # an outside agent (MCP client) through `ctxagent mcp`
    FILE = "file"  # a file brought in whole (an instruction file, an import)
    SUBAGENT = "subagent"  # a sub-agent's own store_memory records (agent/subagents/): never binding
    COMMAND = "command"  # a project's custom command the user ran (.ctxagent/commands/): the repository's text
    UNKNOWN = ""  # written before authorship was recorded

    @classmethod
    def of(cls, value: str | None) -> Author:
        """The author a stored value names; legacy spellings read as what they meant ("assistant":
        text detected in the model's replies), anything unknown as UNKNOWN — never as the user."""
        if value in _LEGACY:
            return _LEGACY[value]
        try:
            return cls(value or "")
        except ValueError:
            return cls.UNKNOWN

    @property
    def label(self) -> str:
        """How a block line names its author: "[decision t3, by the model]"."""
        return _LABELS[self]


_LEGACY = {"assistant": Author.MODEL}
_LABELS = {Author.USER: "the user", Author.MODEL: "the model", Author.TOOL: "tool output", Author.SUMMARY: "a summary",
           Author.MCP: "an MCP client", Author.FILE: "an imported file", Author.SUBAGENT: "a sub-agent",
           Author.COMMAND: "a project command", Author.UNKNOWN: "unknown author"}

# The spellings the store accepts for `provenance` (the authors, and the legacy "assistant").
USER, MODEL, TOOL, SUMMARY, MCP, FILE, SUBAGENT, COMMAND, UNKNOWN = (a.value for a in Author)
PROVENANCES = (*(a.value for a in Author), *_LEGACY)

# Kinds of line that can bind: a constraint the user set, a task the user gave. A decision, a
# change, a test result or a note says what happened; it is never an order, whoever wrote it.
BINDING_KINDS = frozenset({"constraint", "task", "todo"})


@dataclass(frozen=True)
class AuthoredLine:
    """One remembered line with its author (the ledger's pins are these; records convert to one)."""

    kind: str  # constraint | task | todo | decision | failing | change | note …
    text: str
    turn: int
    event_id: int | None = None  # the log event it was read from (None: a memory pin, a summary's item)
    author: Author = field(kw_only=True)  # no default: a line whose author nobody said is a bug, not the user's
    restates_user: bool = field(default=False, kw_only=True)  # another's line in the user's own words (said_by_user)

    @property
    def binding(self) -> bool:
        return binds(self)


def may_replace(new: Author, old: Author) -> bool:
    """THE supersession rule: a newer line replaces an older one on the same subject always, except that
    only the user replaces what the user wrote (a constraint, a decision). The agent's "I'll switch to
    SQLite" after the user's "let's use Postgres", or injected text after "never touch config/", leaves
    the user's line standing beside it. The ledger, the extractive summary and the store all ask this."""
    return old is not Author.USER or new is Author.USER


def binds(line: AuthoredLine) -> bool:
    """THE rule: a line binds only when it is a constraint or an open task in the user's words."""
    return line.kind in BINDING_KINDS and (line.author is Author.USER or line.restates_user)


def may_pin(provenance: str, content: str, user_texts: Iterable[str], kind: str = "constraint") -> bool:
    """Whether a record written by `provenance` binds (is pinned): `binds`, where a line not written
    by the user restates the user only if `said_by_user` (`user_texts` is read only in that case)."""
    author = Author.of(provenance)
    # a sub-agent never heard the user (agent/subagents/): its words never restate the user's
    restates = (author not in (Author.USER, Author.SUBAGENT) and kind in BINDING_KINDS
                and said_by_user(content, user_texts))
    return binds(AuthoredLine(kind, content, 0, author=author, restates_user=restates))


# -- order-aware near-identity ----------------------------------------------------------------------

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}_]+")
_CONTRACTIONS = ((re.compile(r"\bcan'?t\b"), "can not"), (re.compile(r"\bcannot\b"), "can not"),
                 (re.compile(r"\bwon'?t\b"), "will not"), (re.compile(r"\bshan'?t\b"), "shall not"),
                 (re.compile(r"\b(\w+)n't\b"), r"\1 not"),
                 (re.compile(r"\b(do|does|did|is|are|was|were|must|should|could|would|need|have|has)nt\b"), r"\1 not"))
# Words whose presence or absence changes nothing a rule says: articles, politeness, fillers.
FILLERS = frozenset("a an the please kindly just really also so ok okay then me us 也 的 了 请 吧 啊 呢 哦 呀 嘛".split())
# Words that set or flip what a rule says. Near-identity keeps every word anyway; these are what the
# merge rule (rules.near_duplicate) must find the same on both sides, in order.
POLARITY_WORDS = frozenset(
    """not no never none nor neither without always must may might should shall can could will only all any every
    allow allowed deny denied forbid forbidden permit permitted block blocked enable enabled disable disabled
    include exclude add remove delete keep drop skip before after increase decrease more less fewer on off
    true false yes accept reject start stop open close lock unlock encrypt decrypt install uninstall show hide
    public private first last min max minimum maximum ever sometimes required optional
    不 别 勿 没 无 非 未 禁 莫 免 要 必 须 可 允 许 总 始 终 永 从 只 仅 开 关 启 停 增 减 加 删 前 后""".split()
)
_POLARITY_TOKENS = POLARITY_WORDS | frozenset(stem(w) for w in POLARITY_WORDS)  # as identity_tokens spells them
MAX_WHOLE_TEXT = 2000  # a longer user turn is compared by its sentences and clauses only
USER_TEXTS_CACHED = 1024  # user texts whose pieces are kept: more than the store matches against (USER_TEXTS_KEPT)


def identity_tokens(text: str) -> tuple[str, ...]:
    """`text` as the token sequence near-identity compares: NFKC, case-folded, contractions spelled
    out, punctuation dropped, latin words lightly stemmed, each CJK character a token, fillers gone."""
    flat = unicodedata.normalize("NFKC", text or "").casefold().replace("\u2019", "'")
    for pattern, repl in _CONTRACTIONS:
        flat = pattern.sub(repl, flat)
    return tuple(stem(w) for w in _TOKEN.findall(flat) if w not in FILLERS)


def polarity(text: str) -> tuple[str, ...]:
    """The polarity-setting words of `text`, in order (negations, modals, antonym-prone verbs)."""
    return tuple(t for t in identity_tokens(text) if t in _POLARITY_TOKENS)


def near_identical(a: str, b: str) -> bool:
    """Order-aware near-identity: the same words in the same order, up to case, punctuation,
    contractions, fillers and light inflection."""
    ta = identity_tokens(a)
    return bool(ta) and ta == identity_tokens(b)


def _pieces(text: str) -> list[str]:
    """The user's text (unless it is a question), and each sentence and clause of it that carries its
    sentence's polarity and scope (detect.restatable_pieces): a line may restate any of them."""
    whole = len(text) < MAX_WHOLE_TEXT and not text.rstrip().endswith(QUESTION_END)
    return ([text] if whole else []) + restatable_pieces(text)


@lru_cache(maxsize=USER_TEXTS_CACHED)
def _said(text: str) -> frozenset[tuple[str, ...]]:
    """The pieces of one user text as near-identity compares them (the same turns are asked again at
    every store: kept for the most recent ones)."""
    return frozenset(identity_tokens(piece) for piece in _pieces(text))


def said_by_user(content: str, user_texts: Iterable[str]) -> bool:
    """Whether `content` is the user's own words: near-identical to some piece (the turn, a
    sentence, a clause, each with its sentence's polarity and scope) of something the user typed."""
    mine = identity_tokens(content)
    if not mine:
        return False
    return any(mine in _said(text) for text in user_texts)
