"""The written-down rules for merging repeats and for superseding, in one place.

Merge: a new record whose normalized content equals an existing record's of the same type, or whose
key terms overlap it almost completely (Jaccard ≥ MERGE_JACCARD, both with ≥ 3 terms) with the same
polarity words in the same order (provenance.polarity: "enable"/"disable", "do"/"don't", 要/不要 …
never merge), is the same record said again: the existing one gets confirmations + 1 instead of a new row.

Supersede (decisions and constraints only, same type): two records are about the same *subject*
when they share subject terms — key terms minus the verbs of deciding and forbidding ("use",
"switch", "never", "决定", "不要", …), which every such sentence has.
- decision: ≥ 1 shared subject term covering ≥ half of the shorter record's subject terms, or the
  same file plus ≥ 1 shared subject term ("use MySQL for the database" / "use PostgreSQL for the
  database instead" share {database}: 1 of 2);
- constraint: pinned and long-lived, so the bar is higher: ≥ 2 shared subject terms covering ≥ 2/3
  of the shorter one ("don't modify config files" and "never modify the tests" do not collide).
The newer one (higher turn; same turn: the later write) stays current and the older one gets
`superseded_by` — except that a record the user did not write never replaces a constraint the user
wrote (`may_supersede`; provenance.py). Explicit `MemoryStore.supersede(old, new)` needs no shared subject.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ctxagent.context.language.provenance import Author, may_replace, polarity
from ctxagent.context.language.terms import key_terms, normalize


class Authored(Protocol):
    """What supersession reads of a remembered line (a memory record: context/memory/record.py)."""

    @property
    def provenance(self) -> str: ...

MERGE_JACCARD = 0.8

# Words every decision or constraint sentence carries; they say nothing about its subject.
SUBJECT_STOPWORDS = frozenset(
    """use uses using used switch switched switching go going goes went stick prefer choose chose chosen
    decide decided decision decisions let will instead rather never always don dont do does must mustn
    should shouldn avoid remember make sure keep modify modifi change chang edit touch add remov remove
    write writ updat update run running from now actual actually plan want need new old also okay ok
    fine agree agreed settle settled final finally going go with anymore again later today
    使用 决定 选择 改用 采用 就用 换成 确定 定用 不要 必须 禁止 记住 修改 以后 永远 始终 务必 不能 不许 不准 一律 我们
    要用 用了 都用 还是 最终 最后""".split()
)

SUPERSEDABLE = ("decision", "constraint")


def subject_terms(text: str) -> set[str]:
    return key_terms(text, SUBJECT_STOPWORDS)


def near_duplicate(a: str, b: str) -> bool:
    """The same record said again: the same normalized text, or almost the same key terms — with the
    same polarity words in the same order ("Do run X" is not "Don't run X", 要 is not 不要)."""
    if normalize(a) == normalize(b):
        return True
    if polarity(a) != polarity(b):
        return False
    ta, tb = key_terms(a), key_terms(b)
    if len(ta) < 3 or len(tb) < 3:
        return False
    return len(ta & tb) / len(ta | tb) >= MERGE_JACCARD


def same_subject(
    type_: str, new_text: str, old_text: str, new_files: Sequence[str] = (), old_files: Sequence[str] = ()
) -> bool:
    if type_ not in SUPERSEDABLE:
        return False
    a, b = subject_terms(new_text), subject_terms(old_text)
    if not a or not b:
        return False
    shared = len(a & b)
    ratio = shared / min(len(a), len(b))
    if type_ == "decision":
        if shared >= 1 and ratio >= 0.5:
            return True
        return shared >= 1 and bool(set(new_files) & set(old_files))
    return shared >= 2 and ratio >= 2 / 3


def may_supersede(new: Authored, old: Authored) -> bool:
    """Injected text must not lift the user's constraints, nor the model replace the user's decisions:
    only the user replaces what the user wrote (`provenance.may_replace`, the ledger's rule too)."""
    return may_replace(Author.of(new.provenance), Author.of(old.provenance))
