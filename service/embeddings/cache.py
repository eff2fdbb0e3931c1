"""A disk cache of embeddings keyed by model and text hash, plus batching and progress.

Re-indexing a corpus never re-embeds a text whose vector is already cached for the same model.
The cache is one SQLite file per model, safe for several processes (WAL mode).
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from tqdm import tqdm

from service.embeddings.base import Embedder

_LOOKUP_CHUNK = 500


def text_key(role: str, text: str) -> bytes:
    """The cache key of one text: sha256 of role and text (queries and documents may embed differently)."""
    return hashlib.sha256(f"{role}\x00{text}".encode()).digest()


class EmbeddingCache:
    """Vectors on disk, keyed by :func:`text_key`, one SQLite database per model name."""

    def __init__(self, cache_dir: str | Path, model_name: str, dim: int) -> None:
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model_name)
        self.path = Path(cache_dir) / f"{safe}.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.dim = dim
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vec BLOB NOT NULL)")
            self._local.conn = conn
        return conn

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Cached vectors for those keys that are present."""
        found: dict[bytes, np.ndarray] = {}
        conn = self._conn()
        for start in range(0, len(keys), _LOOKUP_CHUNK):
            chunk = list(keys[start:start + _LOOKUP_CHUNK])
            marks = ",".join("?" * len(chunk))
            for key, blob in conn.execute(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", chunk):
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape[0] == self.dim:
                    found[bytes(key)] = vec
        return found

    def put_many(self, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        conn = self._conn()
        with conn:
            conn.executemany(
                "INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)",
                [(key, np.asarray(vec, dtype=np.float32).tobytes()) for key, vec in items],
            )

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM vectors").fetchone()[0])


class CachedEmbedder:
    """Wraps an :class:`Embedder`: batches the work, caches document vectors on disk and recent
    query vectors in memory, and shows a progress bar on long runs.

    ``computed`` counts the texts actually sent to the model, so callers and tests can check that
    unchanged texts were not re-embedded.

    Example::

        emb = CachedEmbedder(UseEmbedder(), "var/embedding-cache")
        emb.embed_documents(texts, progress=True)
    """

    def __init__(self, inner: Embedder, cache_dir: str | Path, *, batch_size: int = 64,
                 query_cache_size: int = 2048) -> None:
        self.inner = inner
        self.batch_size = batch_size
        self._cache_dir = Path(cache_dir)
        self._cache: EmbeddingCache | None = None
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._query_cache_size = query_cache_size
        self._lock = threading.Lock()
        self.computed = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def cache(self) -> EmbeddingCache:
        if self._cache is None:
            self._cache = EmbeddingCache(self._cache_dir, self.inner.name, self.inner.dim)
        return self._cache

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing: list[int] = []
        with self._lock:
            for i, text in enumerate(texts):
                vec = self._queries.get(text)
                if vec is None:
                    missing.append(i)
                else:
                    self._queries.move_to_end(text)
                    out[i] = vec
        if missing:
            vectors = self.inner.embed_queries([texts[i] for i in missing])
            with self._lock:
                self.computed += len(missing)
                for i, vec in zip(missing, vectors, strict=True):
                    out[i] = vec
                    self._queries[texts[i]] = vec
                while len(self._queries) > self._query_cache_size:
                    self._queries.popitem(last=False)
        return out

    def clear_query_cache(self) -> None:
        """Forget cached query vectors (benchmarks time each pipeline from a cold query cache)."""
        with self._lock:
            self._queries.clear()

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """Vectors for ``texts``; only texts missing from the disk cache reach the model."""
        keys = [text_key("doc", t) for t in texts]
        cached = self.cache.get_many(keys)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        todo: list[int] = []
        for i, key in enumerate(keys):
            vec = cached.get(key)
            if vec is None:
                todo.append(i)
            else:
                out[i] = vec
        bar = tqdm(total=len(todo), desc="embedding", unit="doc", disable=not progress or not todo,
                   leave=False)
        for batch in _batches(todo, self.batch_size):
            vectors = self.inner.embed_documents([texts[i] for i in batch])
            for i, vec in zip(batch, vectors, strict=True):
                out[i] = vec
            self.cache.put_many([(keys[i], out[i]) for i in batch])
            with self._lock:
                self.computed += len(batch)
            bar.update(len(batch))
        bar.close()
        return out


def _batches(items: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
