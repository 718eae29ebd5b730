"""Memory: typed records that outlive the session log, recalled into the warm block and searched by tools.

This is its face. `MemoryStore` is what the product opens:

    MemoryStore.open_project(root)   the project's store, `<repo>/.ctxagent/memory.db`
    MemoryStore.open_user()          the user's, for preferences that hold across projects
    store.ingest(events, session)    rule-based records from session-log events (ingest.py)
    store.search(query, ...)         BM25, fused with embedding similarity when a model is installed
    MemoryRecall(store, session)     the builder's warm-block provider (recall.py)

The database itself — records, merge and supersede, aging, lexical search — is `MemoryDB`
(store.py); the modules here depend on it, never on this face. Importing the face loads sqlite3 and
the database code only: the embedding model (numpy) loads on the first semantic search, the session
log's event types on the first ingest, and `MemoryRecall` when first read (context/floor/lazy.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from ctxagent.context.floor.state_paths import ensure_state_dir, project_state_dir, user_state_dir
from ctxagent.context.language.terms import Synonyms
from ctxagent.context.memory.embed import (
    Embedder,
    describe,
    detect as installed_embedder,  # `detect` here is the sibling module
    embed_pending,
)
from ctxagent.context.memory.hybrid import hybrid_search
from ctxagent.context.memory.record import Record
from ctxagent.context.memory.search import cached_query_units, relevant
from ctxagent.context.memory.store import DEFAULT_DEGRADE_AFTER_TURNS, MemoryDB
from ctxagent.context.memory.vectors import Embedding, QueryVectors, VectorIndex

INSTALLED = "installed"  # MemoryStore's default embedder: the installed model (embed.detect), if any
SEARCH_EMBEDS = 16  # records without a vector a search embeds itself, newest first (the rest: on the thread)

_EXPORTS = {  # imported on first use: recall.py reads context/pins.py, which imports this package's leaves
    "MemoryRecall": "ctxagent.context.memory.recall",
}
__all__ = ["MemoryDB", "MemoryRecall", "MemoryStore", "Record", "project_db_path"]

if TYPE_CHECKING:
    from ctxagent.context.history import Event
    from ctxagent.context.memory.recall import MemoryRecall
else:
    from ctxagent.context.floor.lazy import lazy_face

    __getattr__, __dir__ = lazy_face(globals(), _EXPORTS)


def project_db_path(root: str | Path) -> Path:
    return project_state_dir(Path(root)) / "memory.db"


class MemoryStore(MemoryDB):
    """The memory database with what the product adds: where the stores live, ingest from the session
    log, and hybrid search with the optional embedding model (embed.py, hybrid.py, vectors.py).

    `embedder`: the model hybrid search uses — by default the installed one (`embed.detect`), None
    for BM25 alone, or any object with `name`, `dim`, `passages` and `query` (the bench's memo of
    the product's vectors); `embeddings=False` turns it off whatever it is."""

    def __init__(self, conn: sqlite3.Connection, path: Path | None, *, synonyms: Synonyms | None = None,
                 degrade_after_turns: int = DEFAULT_DEGRADE_AFTER_TURNS, scope: str = "project",
                 embeddings: bool = True, embedder: Embedder | str | None = INSTALLED):
        super().__init__(conn, path, synonyms=synonyms, degrade_after_turns=degrade_after_turns, scope=scope)
        self._embeddings = embeddings  # False: BM25 alone even when an embedding model is installed
        self._embedder = embedder
        self._vectors: VectorIndex | None = None
        self._queries: QueryVectors | None = None
        self._work: Embedding | None = None

    @classmethod
    def open_project(cls, root: str | Path, **kw: Any) -> Self:
        """The project's store; `.ctxagent/` is created (or refused, when the repository shipped it)
        by `ensure_state_dir`."""
        ensure_state_dir(Path(root))
        return cls.open(project_db_path(root), **kw)

    @classmethod
    def open_user(cls, **kw: Any) -> Self:
        """The user-level store, for preferences that hold across projects (`scope: user`)."""
        return cls.open(user_state_dir() / "memory.db", scope="user", **kw)

    def ingest(self, events: Iterable[Event], session: str) -> list[int]:
        """Rule-based writes from log events (no model call); idempotent per (session, event id)."""
        from ctxagent.context.memory.ingest import ingest_events  # the log's event types load with it

        ids = ingest_events(self, list(events), session)
        if ids:
            self.embed_soon()  # with the optional model: vectors for what was written, on a background thread
        return ids

    @property
    def embedder(self) -> Embedder | None:
        """The embedding model hybrid search uses (loaded on first use), or None: BM25 alone."""
        if not self._embeddings:
            return None
        if isinstance(self._embedder, str):
            return installed_embedder()
        return self._embedder

    def embed_soon(self) -> None:
        """Embed the records without a vector on a background thread (nothing waits for it)."""
        emb = self.embedder
        if emb is None:
            return
        self._embedding(emb).kick()

    def _embedding(self, emb: Embedder) -> Embedding:
        with self._lock:
            if self._work is None or self._work.embedder is not emb:
                if self._work is not None:
                    self._work.stop(0)
                self._work = Embedding(self, emb, embed_pending)
            return self._work

    def wait_for_vectors(self, timeout: float | None = None) -> bool:
        """Wait for the background embedding to finish; False when `timeout` ran out first."""
        work = self._work
        return work.wait(timeout) if work is not None else True

    def close(self) -> None:
        if self._work is not None:
            self._work.stop()
        super().close()

    @property
    def retrieval(self) -> str:
        return describe(self.embedder) if self._embeddings else "BM25 (embeddings off for this store)"

    def embed_new(self, limit: int | None = None, session: str | None = None) -> int:
        """Give records without a vector one (newest first; `session`'s only when given); 0 without an
        embedding model. Never raises: a record left without a vector is still found by BM25, and a
        later search back-fills it."""
        emb = self.embedder
        if emb is None:
            return 0
        self.wait_for_vectors()  # not the same records twice
        try:
            return embed_pending(self, emb, limit, session)
        except Exception:
            return 0

    def search(self, query: str, layer: str | None = None, type: str | Sequence[str] | None = None,
               file: str | None = None, turns: tuple[int, int] | None = None, limit: int = 8,
               include_superseded: bool = False, semantic: bool = True) -> list[Record]:
        """Records matching `query`, best first, above the relevance floors: BM25, fused with embedding
        similarity when a model is installed and `semantic` (see hybrid.py). Of the records still
        without a vector the newest SEARCH_EMBEDS are embedded first, the rest on the background
        thread meanwhile (BM25 finds them already)."""
        emb = self.embedder if semantic else None
        if emb is not None:
            try:
                if self._embedding(emb).now(SEARCH_EMBEDS):
                    self.embed_soon()  # more than a search embeds itself: the rest on the thread
                with self._lock:
                    if self._vectors is None or self._vectors.model != emb.name:
                        self._vectors = VectorIndex(emb.name, emb.dim)
                        self._queries = QueryVectors(emb.name)
                    queries = self._queries
                    assert queries is not None
                    return hybrid_search(self.conn, self._vectors, lambda text: queries.get(text, emb.query), query,
                                         unrelated=queries.unrelated(emb.passages), synonyms=self.synonyms, layer=layer, type_=type, file=file, turns=turns,
                                         limit=limit, include_superseded=include_superseded, known_vector=queries.peek)
            except Exception:  # the model failed on this query: the lexical answer is still a good one
                pass
        found = self.lexical_search(query, layer=layer, type=type, file=file, turns=turns, limit=limit,
                                    include_superseded=include_superseded)
        with self._lock:
            return relevant(found, self.conn, cached_query_units(query, None))  # the query's own units
