"""Which query units a few records can match: so a search over a handful of records asks FTS5 only
about the words they hold.

FTS5's bm25 scores a row as a sum over the MATCH expression's phrases, each term weighed by that
phrase's own document frequency and multiplied by how often the row holds the phrase: a phrase the
row does not hold adds exactly 0.0. So leaving out of the expression every phrase that none of the
candidate rows holds gives each of them the same score, bit for bit, and the same rows match — while
FTS5 walks only the doclists of the phrases kept (the warm block's recall: 56 phrases of a long task
statement, 9 of them in the store's warm records; 1.0 → 0.2 ms).

The test must never drop a phrase a row holds, so it errs towards keeping: a row's tokens are every
ASCII token `unicode61 remove_diacritics 2` (the index's tokenizer) may make of it — runs of letters
and digits, lower-cased, with a letter that has a diacritic folded to its base or not (é → e; ø and
ß stay as they are, so a token holding one is not ASCII) and a mark removed or not. A phrase with a
term that is not ASCII is always kept, as is a phrase of several terms whose terms the rows hold
(adjacency is not checked).
"""

from __future__ import annotations

import re
import sqlite3
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache

_ASCII_TOKEN = re.compile(r"[a-z0-9]+")
MEMO_ROWS = 8192  # rows whose token sets are remembered (a record's indexed text rarely changes)
_memo: OrderedDict[tuple[str, ...], frozenset[str] | None] = OrderedDict()
_memo_lock = threading.Lock()  # stores in several threads (the project's, the user's) share it


MAX_SOFT = 8  # characters in one word that may or may not split it: beyond this, not worked out


def _fold(ch: str) -> str | None:
    """What a character that is not ASCII may become inside an ASCII token: a mark nothing (it may be
    removed), a letter its NFKD decomposition without the marks when that is ASCII (é → e); None when
    it can only split a token or sit in one that is not ASCII."""
    if unicodedata.combining(ch) or unicodedata.category(ch)[0] == "M":
        return ""
    base = "".join(x for x in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(x))
    return base if base and base.isascii() and base.isalnum() else None


def _word_tokens(word: str) -> set[str] | None:
    """Every ASCII token the tokenizer may make of a word that is not all ASCII; None when not worked out.

    What it does with a character that is not ASCII depends on its Unicode tables (older than
    Python's): it may split the word there, keep it in a token (then the token is not ASCII), or —
    a letter with a diacritic, a mark — fold it into the token (é → e, a mark removed). So each such
    character that can fold is a place the word may or may not split, and every run between two
    such places (or the hard splits: ASCII punctuation, characters that cannot fold) is a token
    that may exist, with what is inside folded. tests/memory/test_memory_search_units.py checks this
    against SQLite over every character."""
    tokens: set[str] = set()
    segment: list[tuple[str, bool]] = []  # (folded text, may split here) of the current hard segment
    for ch in [*word, " "]:
        if ch.isascii():
            if ch.isalnum():
                segment.append((ch, False))
                continue
            folded = None
        else:
            folded = _fold(ch)
        if folded is not None:
            segment.append((folded, True))
            continue
        if segment:  # a hard split: the runs of the segment before it
            soft = [i for i, (_, may) in enumerate(segment) if may]
            if len(soft) > MAX_SOFT:
                return None
            starts = [0, *(i + 1 for i in soft)]
            ends = [*soft, len(segment)]
            for a in starts:
                for b in ends:
                    if b >= a:
                        text = "".join(t for t, _ in segment[a:b])
                        if text:
                            tokens.add(text)
        segment = []
    return tokens


def row_tokens(texts: tuple[str, ...]) -> frozenset[str] | None:
    """The ASCII tokens an indexed row (its columns' texts) may match; None when not known."""
    with _memo_lock:
        if texts in _memo:
            _memo.move_to_end(texts)
            return _memo[texts]
    joined = " ".join(texts).lower()
    found: frozenset[str] | None
    if joined.isascii():
        found = frozenset(_ASCII_TOKEN.findall(joined))
    else:
        out: set[str] = set()
        for word in joined.split():
            part = set(_ASCII_TOKEN.findall(word)) if word.isascii() else _word_tokens(word)
            if part is None:
                out = set()
                found = None
                break
            out |= part
        else:
            found = frozenset(out)
    with _memo_lock:
        _memo[texts] = found
        if len(_memo) > MEMO_ROWS:
            _memo.popitem(last=False)
    return found


def units_held(conn: sqlite3.Connection, units: list[list[str]], rowids: Sequence[int]) -> list[list[str]]:
    """The units (in order) that some of the rows `rowids` of records_fts may hold; every unit when
    that is not known."""
    held: set[str] = set()
    for i in range(0, len(rowids), 500):
        part = list(rowids[i:i + 500])
        for texts in conn.execute(f"SELECT content, tags, files, context FROM records_fts WHERE rowid IN "
                                  f"({','.join('?' * len(part))})", part):
            tokens = row_tokens(tuple(str(t or "") for t in texts))
            if tokens is None:
                return units
            held |= tokens
    out = []
    for unit in units:
        pieces = _unit_pieces(tuple(unit))
        if pieces is None or all(tok in held for p in pieces for tok in p):
            out.append(unit)
    return out


@lru_cache(maxsize=4096)  # the warm block asks the same units at every step of a turn
def _unit_pieces(unit: tuple[str, ...]) -> tuple[tuple[str, ...], ...] | None:
    """A unit's terms as the ASCII tokens FTS5 holds them in; None when a term is not ASCII."""
    pieces = [_ASCII_TOKEN.findall(t.lower()) if t.isascii() else None for t in unit]
    return None if any(p is None for p in pieces) else tuple(tuple(p) for p in pieces if p is not None)


def _holds(unit: list[str], tokens: frozenset[str] | None, text: str) -> bool:
    """The row may hold every term of `unit` (erring towards yes: a term that is not ASCII is looked
    for in the row's text, where its indexed form — CJK bigrams — stands as written)."""
    for term in unit:
        if not term.isascii():
            ok = term in text
        elif tokens is None:
            ok = all(p in text for p in _ASCII_TOKEN.findall(term.lower()))
        else:
            ok = all(p in tokens for p in _ASCII_TOKEN.findall(term.lower()))
        if not ok:
            return False
    return True


def units_per_row(conn: sqlite3.Connection, units: list[list[str]], rowids: Sequence[int]) -> dict[int, int]:
    """How many of `units` each row of records_fts may hold (see `units_held`: it errs towards more)."""
    out: dict[int, int] = {}
    for i in range(0, len(rowids), 500):
        part = list(rowids[i:i + 500])
        for rowid, *texts in conn.execute(f"SELECT rowid, content, tags, files, context FROM records_fts WHERE rowid IN "
                                          f"({','.join('?' * len(part))})", part):
            cols = tuple(str(t or "") for t in texts)
            tokens = row_tokens(cols)
            text = " ".join(cols).lower()
            out[int(rowid)] = sum(1 for unit in units if _holds(unit, tokens, text))
    return out
