"""The embedder interface: text in, L2-normalised float32 vectors out.

Queries and documents are embedded by separate methods because e5-style models prefix them
differently. Implementations load their model lazily, on first use, once per process.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors of dimension ``dim``.

    ``name`` identifies the model and its preprocessing; it keys the embedding cache and is
    recorded in every index manifest, so vectors of different models never mix.

    Example::

        vecs = embedder.embed_documents(["Art. 41 OR ..."])   # shape (1, embedder.dim)
    """

    name: str
    dim: int

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries; returns ``(len(texts), dim)`` float32, rows of norm 1."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents; returns ``(len(texts), dim)`` float32, rows of norm 1."""


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as contiguous float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)
