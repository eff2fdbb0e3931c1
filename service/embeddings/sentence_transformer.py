"""Any sentence-transformers model from a local folder (the ``st`` extra: torch + sentence-transformers)."""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from service.embeddings.base import embed_each_alone, embed_in_windows
from service.errors import ConfigError

if TYPE_CHECKING:
    from service.config import EmbedderSettings


class SentenceTransformerEmbedder:
    """A local sentence-transformers model, run on CPU with the hub switched off.

    Texts longer than the model's ``max_seq_length`` are embedded in windows and pooled
    (:func:`~service.embeddings.base.embed_in_windows`), never cut.

    Args:
        model_path: a folder holding a saved sentence-transformers model.
        query_prefix, document_prefix: prepended texts for models trained with prefixes (e5, bge).

    Raises:
        ConfigError: when the folder does not exist or sentence-transformers is not installed.

    Example::

        SentenceTransformerEmbedder("/path/to/all-MiniLM-L6-v2").embed_queries(["deposit"])
    """

    def __init__(self, model_path: str, *, query_prefix: str = "", document_prefix: str = "",
                 batch_size: int = 32) -> None:
        path = Path(model_path)
        if not path.is_dir():
            raise ConfigError(f"sentence-transformers model folder not found: {model_path}")
        self._path = path
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix
        self._batch_size = batch_size
        self._model = None
        self._dim: int | None = None
        self._lock = threading.Lock()
        digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]
        self.name = f"st:{path.name}:{digest}"

    @classmethod
    def from_config(cls, settings: EmbedderSettings) -> SentenceTransformerEmbedder:
        """The embedder of the ``embedder`` settings; the table rule of :data:`service.plugins.EMBEDDERS`."""
        return cls(settings.model_path, batch_size=settings.batch_size)

    def _load(self):  # type: ignore[no-untyped-def]
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise ConfigError(
                        "embedder.kind=sentence-transformers needs the 'st' extra: pip install -e '.[st]'"
                    ) from exc
                self._model = SentenceTransformer(str(self._path), device="cpu")
                get_dim = getattr(self._model, "get_embedding_dimension", None) or \
                    self._model.get_sentence_embedding_dimension
                self._dim = int(get_dim())
            return self._model

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._load()
        assert self._dim is not None
        return self._dim

    def _encode(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        model = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)

        def encode(pieces: list[str]) -> np.ndarray:
            return model.encode([prefix + p for p in pieces], batch_size=self._batch_size,
                                show_progress_bar=False, convert_to_numpy=True)

        return embed_in_windows(texts, lambda text: self._windows(model, text, prefix), encode)

    @staticmethod
    def _windows(model, text: str, prefix: str) -> list[str]:  # type: ignore[no-untyped-def]
        """``text`` in pieces that fit the model's ``max_seq_length`` with the prefix and special tokens.

        sentence-transformers cuts longer input silently; the pieces are cut at token boundaries."""
        limit = int(getattr(model, "max_seq_length", 0) or 0)
        tokenizer = getattr(model, "tokenizer", None)
        if limit <= 0 or tokenizer is None or not getattr(tokenizer, "is_fast", False):
            return [text]
        room = limit - len(tokenizer(prefix, add_special_tokens=False)["input_ids"]) - 4  # special tokens, margin
        offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        if room <= 0 or len(offsets) <= room:
            return [text]
        cuts = [offsets[i][0] for i in range(room, len(offsets), room)]
        bounds = [0, *cuts, len(text)]
        return [text[a:b] for a, b in itertools.pairwise(bounds) if text[a:b].strip()]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return embed_each_alone(texts, lambda one: self._encode(one, self._query_prefix))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self._document_prefix)
