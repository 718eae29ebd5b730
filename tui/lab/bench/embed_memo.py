"""Embeddings remembered across the replay's runs and processes: the same vectors, computed once.

The product's memory store embeds every record it ingests (with the embeddings extra installed), and
in the replay that is most of ctxagent's time: about a third of a second per step on one thread. The
vector of a text depends on the text and the model only (the engine is deterministic, one text or a
batch: tests/bench/test_embed_memo.py checks it), so the bench keeps them: in the process, and in a
SQLite file (`--embed-cache`, by default under the user's cache directory) shared by the worker
processes and by later runs. A replay with the memo gives exactly the vectors, hence exactly the
results, of one without it; only the time differs.

The hook is the store's supported one: `MemoryStore.open(path, embedder=...)` with a `MemoEmbedder`,
which wraps the product's embedder (`detect()`).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from ctxagent.context.memory import MemoryStore

MAX_IN_PROCESS = 200_000  # vectors held in memory per process (384 floats each: ≈ 300 MB at most)


def default_cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ctxagent" / "bench-embeddings.sqlite"


class MemoEmbedder:
    """An embedder that remembers: `passages` and `query` look a text up before asking the model."""

    def __init__(self, inner: Any, path: Path | None):
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.path = path
        self._memo: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.hits = self.misses = 0
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(str(path), timeout=60, isolation_level=None, check_same_thread=False)
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT, kind TEXT, digest TEXT, vec BLOB, "
                             "PRIMARY KEY (model, kind, digest))")
                self._conn = conn
            except (OSError, sqlite3.Error):
                self._conn = None  # no file: the in-process memo alone

    @staticmethod
    def _digest(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def _lookup(self, kind: str, digests: list[str]) -> dict[str, Any]:
        import numpy as np

        found = {d: self._memo[(kind, d)] for d in digests if (kind, d) in self._memo}
        want = [d for d in digests if d not in found]
        if want and self._conn is not None:
            try:
                for i in range(0, len(want), 500):
                    part = want[i:i + 500]
                    rows = self._conn.execute(
                        f"SELECT digest, vec FROM vectors WHERE model = ? AND kind = ? AND digest IN ({','.join('?' * len(part))})",
                        [self.name, kind, *part]).fetchall()
                    for d, blob in rows:
                        found[d] = np.frombuffer(blob, dtype=np.float32).copy()
            except sqlite3.Error:
                pass
        return found

    def _store(self, kind: str, pairs: list[tuple[str, Any]]) -> None:
        if len(self._memo) > MAX_IN_PROCESS:
            self._memo.clear()
        for d, v in pairs:
            self._memo[(kind, d)] = v
        if self._conn is not None and pairs:
            try:
                self._conn.executemany("INSERT OR IGNORE INTO vectors (model, kind, digest, vec) VALUES (?, ?, ?, ?)",
                                       [(self.name, kind, d, v.astype("float32").tobytes()) for d, v in pairs])
            except sqlite3.Error:
                pass

    def passages(self, texts: list[str]) -> Any:
        import numpy as np

        with self._lock:
            digests = [self._digest(t) for t in texts]
            found = self._lookup("passage", digests)
            missing = [i for i, d in enumerate(digests) if d not in found]
            self.hits += len(texts) - len(missing)
            self.misses += len(missing)
            if missing:
                vecs = np.asarray(self.inner.passages([texts[i] for i in missing]), dtype=np.float32)
                fresh = [(digests[i], vecs[j]) for j, i in enumerate(missing)]
                self._store("passage", fresh)
                found.update(fresh)
                for d in digests:
                    self._memo[("passage", d)] = found[d]
            return np.stack([found[d] for d in digests]) if texts else np.zeros((0, self.dim), dtype=np.float32)

    def query(self, text: str) -> Any:
        import numpy as np

        with self._lock:
            d = self._digest(text)
            found = self._lookup("query", [d])
            if d in found:
                self.hits += 1
                return found[d]
            self.misses += 1
            vec = np.asarray(self.inner.query(text), dtype=np.float32)
            self._store("query", [(d, vec)])
            return vec


_EMBEDDERS: dict[str, MemoEmbedder] = {}


def memo_embedder(path: Path | None) -> MemoEmbedder | None:
    """The process's memoizing wrapper of the product's embedder for this cache file (None without a model)."""
    from ctxagent.context.memory.embed import detect

    inner = detect()  # None when the model is missing or turned off (CTXAGENT_EMBEDDINGS=off): BM25 alone
    if inner is None:
        return None
    key = str(path)
    memo = _EMBEDDERS.get(key)
    if memo is None or memo.inner is not inner:
        memo = _EMBEDDERS[key] = MemoEmbedder(inner, path)
    return memo


class MemoStoreOpener:
    """Opens ctxagent's memory store for one run of the replay (picklable, for the worker processes)."""

    def __init__(self, cache: Path | None):
        self.cache = cache

    def __call__(self, path: Path) -> MemoryStore:
        return MemoryStore.open(path, embedder=memo_embedder(self.cache))

    def __repr__(self) -> str:  # part of the plan's key: where vectors are kept does not change a result
        return "MemoStoreOpener"
