"""A sentence-transformers CrossEncoder reranker, loaded from a local model folder.

No cross-encoder ships with the project; point ``agents.cross_encoder_path`` at one (for example a
multilingual MS MARCO cross-encoder saved with ``save_pretrained``). It scores (question, article)
pairs for the best ``candidates`` of the fallback order; the rest of the pool follows in that
order. The model loads lazily, once per process.

Example::

    reranker = CrossEncoderReranker("/models/mmarco-mMiniLMv2-L12")
    reranker.rerank(query, pool, k=10, context=RerankContext(docs=docs, fallback=ids))
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from service.corpus.model import Hit, Query
from service.corpus.views import embedding_text
from service.errors import ConfigError
from service.rerank.base import RerankContext, Reranker, RerankerParts, in_order

CANDIDATES = 50


class CrossEncoderReranker:
    """Scores (question, document) pairs with a local CrossEncoder.

    Args:
        path: a local folder loadable by ``sentence_transformers.CrossEncoder``.
        candidates: how many of the best fallback-ordered hits to score.
        max_length: token limit of each pair.

    Raises:
        ConfigError: (on first use) when the folder is missing or not a loadable model.
    """

    name = "cross-encoder"
    uses_features = False
    reads_documents = True

    @classmethod
    def from_parts(cls, parts: RerankerParts) -> Reranker:
        """The runtime's cross-encoder (one per model folder and process).

        Raises:
            ConfigError: when no cross-encoder folder is configured.
        """
        if parts.cross_encoder is None:
            raise ConfigError("reranker cross-encoder needs agents.cross_encoder_path "
                              "(LEXSEARCH_AGENTS_CROSS_ENCODER_PATH), a local CrossEncoder folder")
        return parts.cross_encoder()

    def __init__(self, path: str, *, candidates: int = CANDIDATES, max_length: int = 256) -> None:
        self.path = path
        self.candidates = candidates
        self.max_length = max_length
        self._model: Any = None
        self._lock = threading.Lock()

    def model(self) -> Any:
        with self._lock:
            if self._model is None:
                if not self.path or not Path(self.path).is_dir():
                    raise ConfigError(f"cross-encoder model folder not found: {self.path!r} "
                                      "(set agents.cross_encoder_path / LEXSEARCH_AGENTS_CROSS_ENCODER_PATH)")
                try:
                    from sentence_transformers import CrossEncoder
                except ImportError:
                    raise ConfigError("the cross-encoder reranker needs sentence-transformers "
                                      "(pip install 'lexsearch[st]')") from None
                try:
                    self._model = CrossEncoder(self.path, max_length=self.max_length, device="cpu")
                except (OSError, ValueError) as exc:
                    raise ConfigError(f"cannot load a cross-encoder from {self.path}: {exc}") from None
            return self._model

    def rerank(self, query: Query, hits: Sequence[Hit], *, k: int, context: RerankContext | None = None) -> list[Hit]:
        context = context or RerankContext()
        base = context.fallback or [h.doc_id for h in hits]
        by_id = {h.doc_id: h for h in hits}
        top = [d for d in base if d in by_id and d in context.docs][: self.candidates]
        if not top:
            context.notes["fallback"] = "no document texts to score"
            return in_order(hits, base, self.name, k)
        pairs = [(query.text, embedding_text(context.docs[d])) for d in top]
        raw = self.model().predict(pairs, show_progress_bar=False)
        scores = np.asarray(raw, dtype=np.float64).reshape(len(top), -1)
        for doc_id, score in zip(top, scores[:, -1], strict=True):
            by_id[doc_id].scores["ce"] = float(score)
        scored = sorted(top, key=lambda d: -by_id[d].scores["ce"])
        return in_order(hits, scored + base, self.name, k)
