"""The base of embedders whose model runs in this process: loaded once, on first use, one batch at a time.

A subclass names its model (``name``, ``dim``) and says how to load it and how to encode a batch.

Documents are encoded in batches (throughput). Queries are encoded one text per forward pass, so a
query's vector depends on its text alone: in a batch, the matrix products round a row differently
with its neighbours (USE: up to 2e-7 per component, in 28 of 64 GerLayQA questions), and which
texts share a batch depends on what the query cache already held, so near-tied candidates could
swap places between runs of the same question. One pass per text costs little for queries (USE, five
GerLayQA questions: 102 ms one by one against 112 ms as one batch; docs/EMBEDDERS.md).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from service.embeddings.base import embed_each_alone
from service.vectors import l2_normalize

if TYPE_CHECKING:
    from service.config import EmbedderSettings


class LocalEmbedder:
    """An :class:`~service.embeddings.base.Embedder` over an in-process model using ``threads`` threads.

    Empty texts are embedded as ``"."``, so every row is a real vector; rows come out L2-normalised.
    """

    name: str
    dim: int

    def __init__(self, threads: int = 1) -> None:
        self._threads = max(1, threads)  # 0 (embedder.threads unresolved, outside a Runtime): one
        self._model: Any = None
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, settings: EmbedderSettings) -> Self:
        """The embedder of the ``embedder`` settings; the table rule of :data:`service.plugins.EMBEDDERS`."""
        return cls(threads=settings.threads)

    def load(self, threads: int) -> Any:
        """The model (called once)."""
        raise NotImplementedError

    def encode(self, model: Any, texts: list[str], *, is_query: bool) -> np.ndarray:
        """The model's vectors of ``texts`` (not yet normalised)."""
        raise NotImplementedError

    def _encode(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            if self._model is None:
                self._model = self.load(self._threads)
            # The models' forward passes are not re-entrant across threads for one model object.
            texts = [t if t.strip() else "." for t in texts]
            model = self._model
            if is_query:
                vectors = embed_each_alone(texts, lambda one: self.encode(model, one, is_query=True))
            else:
                vectors = self.encode(model, texts, is_query=False)
        return l2_normalize(vectors)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, is_query=True)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, is_query=False)
