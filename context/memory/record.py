"""One memory record, as stored and as returned by search."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass, field
from typing import Any

from ctxagent.context.language.provenance import Author, AuthoredLine

LAYERS = ("warm", "cold")
# Not a layer one writes to: records written in turns a /rewind took back. Kept (listed, with their
# history), never searched or recalled; a repeat after the rewind makes one current again.
RETIRED = "retired"
# `turn`: a conversational turn kept verbatim (cold, searchable, never in the warm block) — see turns.py
TYPES = ("decision", "constraint", "change", "todo", "note", "summary", "spill", "turn")
TODO_STATUSES = ("open", "done")

COLUMNS = (
    "id, layer, type, content, tags, files, session, turn, last_turn, created_at, updated_at, confirmations, "
    "importance, superseded_by, source_events, pinned, status, context, provenance"
)


@dataclass
class Record:
    id: int
    type: str
    content: str
    layer: str = "warm"
    tags: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    session: str = ""
    turn: int = 0
    last_turn: int = 0
    created_at: float = 0.0
    updated_at: float = 0.0
    confirmations: int = 1
    importance: float = 0.5
    superseded_by: int | None = None
    source_events: list[int] = field(default_factory=list)  # event ids in `session`'s log
    pinned: bool = False
    status: str | None = None
    context: str = ""
    provenance: str = ""  # who wrote it: an Author's value (context/language/provenance.py)
    score: float | None = None  # search rank (higher is better); None outside search

    @property
    def current(self) -> bool:
        return self.superseded_by is None and self.layer != RETIRED

    @property
    def author(self) -> Author:
        return Author.of(self.provenance)

    def authored(self) -> AuthoredLine:
        """The record as an authored line; `pinned` is the store's verdict of the binding rule at write
        time, so a constraint pinned without being the user's is one in the user's own words."""
        return AuthoredLine(self.type, self.content, self.turn, author=self.author,
                            restates_user=self.pinned and self.author is not Author.USER)

    @property
    def binding(self) -> bool:
        """A current record that binds (provenance.binds): the user's pinned constraint, the user's open to-do."""
        if not self.current or (self.type == "todo" and (self.status or "open") != "open"):
            return False
        return (self.pinned or self.type == "todo") and self.authored().binding

    def line(self, author: bool = False) -> str:
        """The compact form used in the warm block and tool output: "[constraint t1] ...";
        `author`: with who wrote it ("[todo open t2, by the model] ...")."""
        label = self.type if self.type != "todo" else f"todo {self.status or 'open'}"
        text = " ".join(self.content.split())
        files = ""
        if self.files and not any(f in text for f in self.files):
            files = f" ({', '.join(self.files[:3])})"
        by = f", by {self.author.label}" if author else ""
        return f"[{label} t{self.turn}{by}] {text}{files}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["score"] is None:
            d.pop("score")
        return d

    @staticmethod
    def from_row(row: sqlite3.Row | tuple[Any, ...], score: float | None = None) -> Record:
        (rid, layer, type_, content, tags, files, session, turn, last_turn, created, updated, conf, importance, sup,
         sources, pinned, status, context, provenance) = tuple(row)[:19]
        return Record(
            id=int(rid), type=type_, content=content, layer=layer, tags=_json_list(tags), files=_json_list(files),
            session=session, turn=int(turn), last_turn=int(last_turn), created_at=float(created), updated_at=float(updated),
            confirmations=int(conf), importance=float(importance), superseded_by=sup,
            source_events=_json_list(sources), pinned=bool(pinned), status=status, context=context,
            provenance=provenance, score=score,
        )


def _json_list(text: str) -> Any:
    """json.loads of a stored list column; the empty list most records hold without the parser (a
    search builds a record per candidate: at 100k records that parse was a third of a hybrid search)."""
    return [] if text == "[]" else json.loads(text)
