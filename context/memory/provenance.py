"""Who wrote a memory record, and the one rule for when a constraint may bind.

A pinned constraint is shown in every request as binding. Text the model read (a file, a web page,
a tool's output) can carry instructions, and the model — or a model summarizing the conversation —
can write them down as a `constraint`. So a constraint is pinned only when it comes from the user:

- written by the user (a user turn, `ctxagent memory add`, /remember): provenance USER, pinned;
- written by anyone else (the model's store_memory, an outside agent over MCP, a compaction
  summary, the assistant's own text): stored, searchable, but pinned only if it matches what the
  user typed — some sentence of a user turn has (almost) the same words (`said_by_user`).

Records keep their provenance, so a reader can tell who wrote each one; a record the user later
states again becomes the user's (store.py's merge), and a record not written by the user never
supersedes a constraint the user wrote (rules.may_supersede).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ctxagent.context.memory.detect import sentences
from ctxagent.context.memory.terms import stem, terms

USER = "user"  # the user's own words
MODEL = "model"  # the model, through the store_memory tool
MCP = "mcp"  # an outside agent, through `ctxagent mcp`
ASSISTANT = "assistant"  # decisions and todos detected in the assistant's text
SUMMARY = "summary"  # an item of a compaction summary
TOOL = "tool"  # a fact from a tool result (a change, test counts)
SUBAGENT = "sub-agent"  # a sub-agent's store_memory (agent/subagents/): it never heard the user, so never binds
UNKNOWN = ""  # written before provenance was recorded
PROVENANCES = (USER, MODEL, MCP, ASSISTANT, SUMMARY, TOOL, SUBAGENT, UNKNOWN)

SIMILARITY = 0.75  # Jaccard of the two term sets
# Words that set a sentence's polarity: a constraint and the user's words must carry the same ones,
# or "Always edit the config files" would pass for "Never edit the config files". Negations count
# as one marker (never / don't / not / 不要 are the same "no").
_NEGATIONS_EN = frozenset({"not", "no", "never", "don", "doesn", "didn", "won", "cannot", "nor", "without", "mustn",
                           "shouldn", "isn", "aren", "avoid", "stop", "neither"})
_NEGATIONS_ZH = ("不", "别", "禁", "勿", "没", "无", "莫", "免")
_MODALS = frozenset({"always", "must", "should", "may", "can", "allow", "allowed", "ok", "fine", "free", "freely",
                     "可以", "允许", "必须", "总是", "始终", "一律", "随意"})
_CLAUSE = re.compile(r"[,;:，；：、]|\band\b|\bbut\b|然后|并且|但是")


_NEGATIONS_STEMMED = frozenset(stem(w) for w in _NEGATIONS_EN)
_MODALS_STEMMED = frozenset(stem(w) for w in _MODALS)


def _term_set(text: str) -> set[str]:
    return {stem(t) for t in terms(text)}


def _polarity(term_set: set[str]) -> frozenset[str]:
    """The polarity markers among (stemmed) terms."""
    out = set()
    for t in term_set:
        if t in _NEGATIONS_STEMMED or any(ch in t for ch in _NEGATIONS_ZH):
            out.add("NOT")
        elif t in _MODALS_STEMMED:
            out.add(t)
    return frozenset(out)


def similarity(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _pieces(text: str) -> list[str]:
    """The user's text, each sentence, and each clause of a sentence: a constraint may restate any."""
    out = [text] if len(text) < 2000 else []
    for sentence in sentences(text):
        out.append(sentence)
        clauses = [c for c in _CLAUSE.split(sentence) if c.strip()]
        if len(clauses) > 1:
            out.extend(clauses)
    return out


def said_by_user(content: str, user_texts: Iterable[str]) -> bool:
    """Whether `content` restates something the user typed: some piece of a user turn (the turn, a
    sentence, a clause) has nearly the same words, and the same polarity."""
    mine = _term_set(content)
    if not mine:
        return False
    polarity = _polarity(mine)
    for text in user_texts:
        for piece in _pieces(text):
            theirs = _term_set(piece)
            if _polarity(theirs) == polarity and similarity(mine, theirs) >= SIMILARITY:
                return True
    return False


def may_pin(provenance: str, content: str, user_texts: Iterable[str]) -> bool:
    """Whether a constraint written by `provenance` may be pinned (bind): the user's own words, or words
    that restate what the user typed (`user_texts`, read only in that second case)."""
    return provenance == USER or (provenance != SUBAGENT and said_by_user(content, user_texts))
