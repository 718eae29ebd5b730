"""The store's vectors in memory, searched without a Python loop; query vectors remembered; records
embedded in the background.

`VectorIndex` is one model's vectors as a float32 matrix (rows L2-normalized), loaded lazily from
`record_vectors` and topped up by `seq` as rows arrive (new records, records re-embedded), in
place: the buffer grows by doubling, so a vector arriving costs O(1), not a copy of the matrix.
A row deleted (forget, a model change) shows in the row count: then it reloads.

Nearest neighbours are a matrix-vector product and an argpartition. Up to EXACT_ROWS vectors every
row is scored in full (LoCoMo's conversations, most projects: the exact answer). Above it a full
product costs ~11 ms of memory bandwidth at 100k rows (384 floats each), so the rows are scored
first in COARSE_DIMS principal directions (fitted on a fixed sample of the stored rows, refitted
when the index has doubled), and the best COARSE_POOL × n of them re-scored in full: the answer is
exact whenever the true nearest n are among them (bench memory-latency reports how often, at 100k).

`QueryVectors` keeps the vectors of the last queries: the same question asked at every step of a
turn, or again by the model, is embedded once. `Embedding` embeds the records that have no vector
on a background thread, a few at a time, so that neither ingest nor search ever waits for the model.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxagent.context.memory.embed import Embedder
    from ctxagent.context.memory.store import MemoryDB

EXACT_ROWS = 20_000  # up to this many vectors, nearest() scores every one in full
COARSE_DIMS = 64  # ... above it, first in this many principal directions
COARSE_POOL = 8  # ... keeping this many candidates per neighbour wanted for the full score
FIT_SAMPLE = 4096  # rows the principal directions are fitted on (every k-th stored row)
QUERY_VECTORS = 256  # query vectors remembered per store
BACKGROUND_BATCH = 4  # records embedded per hold of the model (a query waits at most this long for it)


CHUNK_ELEMENTS = 1 << 18  # a matrix-vector product is done in pieces of this many floats (see `matvec`)


def matvec(matrix: Any, vec: Any) -> Any:
    """matrix @ vec, in pieces small enough that BLAS does each on the calling thread: over 100k rows
    its threads cost 3-4x the CPU time on a machine whose cores are busy (a search runs beside the
    agent's other work), for no gain in wall time there."""
    import numpy as np

    rows = len(matrix)
    out = np.empty(rows, dtype=np.float32)
    step = max(1, CHUNK_ELEMENTS // max(1, matrix.shape[1]))
    for start in range(0, rows, step):
        np.dot(matrix[start:start + step], vec, out=out[start:start + step])
    return out


class VectorIndex:
    """One model's stored vectors as a matrix, kept in memory and topped up as rows arrive."""

    def __init__(self, model: str, dim: int):
        self.model = model
        self.dim = dim
        self._reset()

    def _reset(self) -> None:
        import numpy as np

        dim = self.dim
        self._buf = np.zeros((0, dim), dtype=np.float32)
        self._ids = np.zeros(0, dtype=np.int64)
        self._n = 0
        self._pos: dict[int, int] = {}  # record id -> row
        self._count = 0  # rows of record_vectors (every model's) when last read, and their highest seq
        self._seq = 0
        self._stamp: tuple[int, int] | None = None  # (the connection's writes, other connections' commits) then
        self._basis: Any = None  # (COARSE_DIMS, dim): principal directions, fitted at _fitted_at rows
        self._coarse: Any = None  # (capacity, COARSE_DIMS): the rows projected on them
        self._fitted_at = 0

    @property
    def ids(self) -> Any:
        return self._ids[:self._n]

    @property
    def matrix(self) -> Any:
        return self._buf[:self._n]

    def refresh(self, conn: sqlite3.Connection) -> None:
        """Read the rows written since the last refresh (all of them after a deletion or when another
        model's rows changed). Nothing written since — the usual case at a search — costs two pragmas:
        counting this model's rows would read every vector."""
        import numpy as np

        stamp = (conn.total_changes, conn.execute("PRAGMA data_version").fetchone()[0])
        if stamp == self._stamp:
            return
        count, top = conn.execute("SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM record_vectors").fetchone()
        self._stamp = stamp
        if (count, top) == (self._count, self._seq):
            return
        newer = conn.execute("SELECT record_id, model, vec FROM record_vectors WHERE seq > ? ORDER BY seq",
                             (self._seq,)).fetchall()
        fresh = {int(rid): vec for rid, _, vec in newer}  # a record written twice since: its last vector
        appended = [rid for rid in fresh if rid not in self._pos]
        if any(m != self.model for _, m, _ in newer) or self._count + len(appended) != int(count):
            # rows were deleted, or another model's written: start over with this model's rows
            self._reset()
            fresh = {int(rid): vec for rid, vec in conn.execute(
                "SELECT record_id, vec FROM record_vectors WHERE model = ? ORDER BY record_id", (self.model,))}
            appended = list(fresh)
        for rid, vec in fresh.items():
            if rid in self._pos:
                self._set(self._pos[rid], np.frombuffer(vec, dtype=np.float32))
        if appended:
            self._grow(self._n + len(appended))
            rows = np.frombuffer(b"".join(fresh[rid] for rid in appended), dtype=np.float32).reshape(len(appended), self.dim)
            start = self._n
            self._buf[start:start + len(appended)] = rows
            self._ids[start:start + len(appended)] = appended
            self._pos.update((rid, start + i) for i, rid in enumerate(appended))
            self._n += len(appended)
            if self._coarse is not None:
                self._coarse[start:self._n] = rows @ self._basis.T
        self._count, self._seq, self._stamp = int(count), int(top), stamp

    def _grow(self, need: int) -> None:
        import numpy as np

        if need <= len(self._buf):
            return
        cap = max(need, 2 * len(self._buf), 256)
        buf = np.zeros((cap, self.dim), dtype=np.float32)
        buf[:self._n] = self._buf[:self._n]
        ids = np.zeros(cap, dtype=np.int64)
        ids[:self._n] = self._ids[:self._n]
        self._buf, self._ids = buf, ids
        if self._coarse is not None:
            coarse = np.zeros((cap, COARSE_DIMS), dtype=np.float32)
            coarse[:self._n] = self._coarse[:self._n]
            self._coarse = coarse

    def _set(self, row: int, vec: Any) -> None:
        self._buf[row] = vec
        if self._coarse is not None:
            self._coarse[row] = vec @ self._basis.T

    def _fit(self) -> None:
        """Principal directions of a fixed sample of the rows (every k-th in row order)."""
        import numpy as np

        step = max(1, self._n // FIT_SAMPLE)
        sample = self._buf[:self._n:step].astype(np.float64)
        _, _, vt = np.linalg.svd(sample - sample.mean(axis=0), full_matrices=False)
        self._basis = np.ascontiguousarray(vt[:COARSE_DIMS], dtype=np.float32)
        self._coarse = np.zeros((len(self._buf), COARSE_DIMS), dtype=np.float32)
        self._coarse[:self._n] = self._buf[:self._n] @ self._basis.T
        self._fitted_at = self._n

    def scores(self, query_vec: Any, n: int) -> tuple[Any, Any]:
        """(row indices, cosine similarities) of at least the best `n` rows for `query_vec` (all of
        them when n covers the index), best first, ties by row: what a stable sort of every row's
        similarity puts first. Above EXACT_ROWS a coarse pass chooses which rows are scored in full."""
        import numpy as np

        q = np.asarray(query_vec, dtype=np.float32)
        if self._n <= EXACT_ROWS or n * COARSE_POOL >= self._n:
            rows, sims = np.arange(self._n), matvec(self.matrix, q)
        else:
            if self._coarse is None or self._n >= 2 * self._fitted_at:
                self._fit()
            rough = matvec(self._coarse[:self._n], self._basis @ q)
            keep = n * COARSE_POOL
            rows = np.sort(np.argpartition(-rough, keep - 1)[:keep])
            sims = self._buf[rows] @ q
        if n < len(rows):  # the best n, and every row tied with the n-th (a stable sort may put it first)
            kth = np.partition(-sims, n - 1)[n - 1]
            pick = np.nonzero(-sims <= kth)[0]
            rows, sims = rows[pick], sims[pick]
        order = np.lexsort((rows, -sims))
        return rows[order], sims[order]

    def nearest(self, query_vec: Any, n: int, allowed: Callable[[list[int]], set[int]] | None = None,
                floor: float | None = None, scored: tuple[Any, Any] | None = None) -> list[tuple[int, float]]:
        """(record id, similarity) of the `n` rows nearest `query_vec`, best first, among the ids
        `allowed` lets through (it is asked about candidates only, a widening batch at a time), and
        at least `floor` similar when given; `scored`: what scores(query_vec, n) returned already."""
        if not self._n or n <= 0:
            return []
        want = n
        while True:
            rows, sims = scored if scored is not None else self.scores(query_vec, want)
            scored = None
            out: list[tuple[int, float]] = []
            batch = max(2 * n, 64)
            for start in range(0, len(rows), batch):
                ids = [int(x) for x in self._ids[rows[start:start + batch]]]
                sim = [float(x) for x in sims[start:start + batch]]
                ok = allowed(ids) if allowed is not None else None
                for rid, s in zip(ids, sim, strict=True):
                    if floor is not None and s < floor:
                        return out
                    if ok is None or rid in ok:
                        out.append((rid, s))
                        if len(out) >= n:
                            return out
            if len(rows) >= self._n:
                return out
            want *= 4  # the filters let too few of the coarse candidates through: widen the coarse pass


# Everyday sentences no record is about, in both languages: a query's similarity to the closest of
# them is what this model gives text unrelated to it (hybrid.py's vector floor).
UNRELATED = ("hello", "ok, thanks", "The weather is nice today.", "Let me check that.", "Here is the list of files.",
             "I will run the tests now.", "Sounds good to me.", "What do you think?",
             "你好", "好的，谢谢", "今天天气很好。", "我来看一下。", "这是文件列表。", "我现在运行测试。", "听起来不错。", "你觉得呢？")


class QueryVectors:
    """The vectors of the last QUERY_VECTORS queries, for one model, and of UNRELATED."""

    def __init__(self, model: str):
        self.model = model
        self._vecs: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._unrelated: Any = None
        self.hits = self.misses = 0

    def unrelated(self, passages: Callable[[list[str]], Any]) -> Any:
        """UNRELATED's vectors (embedded on first use), a matrix of rows."""
        if self._unrelated is None:
            import numpy as np

            self._unrelated = np.asarray(passages(list(UNRELATED)), dtype=np.float32)
        return self._unrelated

    def peek(self, text: str) -> Any:
        """The vector of `text` when it is remembered, else None (nothing is embedded)."""
        with self._lock:
            return self._vecs.get(text)

    def get(self, text: str, embed: Callable[[str], Any]) -> Any:
        with self._lock:
            vec = self._vecs.get(text)
            if vec is not None:
                self._vecs.move_to_end(text)
                self.hits += 1
                return vec
        vec = embed(text)  # outside the lock: the model is the slow part and has its own lock
        with self._lock:
            self.misses += 1
            self._vecs[text] = vec
            while len(self._vecs) > QUERY_VECTORS:
                self._vecs.popitem(last=False)
        return vec


class Embedding:
    """Records without a vector embedded on a background thread, BACKGROUND_BATCH at a time, newest
    first, until none is left; `kick` starts it when it is not running. A search embeds the few
    newest itself (`now`): what ingest wrote just before it is searched by meaning at once, and a
    store of a few records gives the same answer however fast the thread is. Both pick and embed
    under one hold of the model, so no record is embedded twice. Never raises: a record left without
    a vector is still found by BM25, and a later kick tries again."""

    def __init__(self, store: MemoryDB, embedder: Embedder, embed_pending: Callable[..., int]):
        self.store = store
        self.embedder = embedder
        self._embed_pending = embed_pending
        self.checked = 0  # every record up to this id had a vector when last looked at
        self._lock = threading.Lock()
        self._model = threading.Lock()  # one batch picked and embedded at a time
        self._thread: threading.Thread | None = None
        self._again = False
        self._stop = threading.Event()

    def kick(self) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            self._again = True
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="ctxagent-memory-embed", daemon=True)
                self._thread.start()

    def _batch(self, limit: int) -> int:
        """Embed up to `limit` of the newest records without a vector; how many (0: none was left)."""
        with self._model:
            top = self._top()
            done = self._embed_pending(self.store, self.embedder, limit, batch=limit, above=self.checked)
            if not done:
                self.checked = max(self.checked, top)
            return done

    def now(self, limit: int) -> bool:
        """Embed up to `limit` records here (the newest first); True when some are left for the thread."""
        if not self.pending():
            return False
        done = self._batch(limit)
        return done >= limit

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                if not self._again:
                    self._thread = None
                    return
                self._again = False
            try:
                while not self._stop.is_set() and self._batch(BACKGROUND_BATCH):
                    with self._lock:
                        self._again = False  # what a kick asked for meanwhile is being done
            except Exception:  # the store closed, the model failed: BM25 still finds the records
                with self._lock:
                    self._thread = None
                return

    def _top(self) -> int:
        with self.store._lock:
            return int(self.store.conn.execute("SELECT COALESCE(MAX(id), 0) FROM records").fetchone()[0])

    def pending(self) -> bool:
        """Records may be waiting for a vector: some are newer than what was last checked."""
        return self._top() > self.checked

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until nothing is being embedded; False when `timeout` ran out first."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self.wait(timeout)
