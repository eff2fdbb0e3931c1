"""The embedder interface: text in, L2-normalised float32 vectors out.

Queries and documents are embedded by separate methods because e5-style models prefix them
differently. Implementations load their model lazily, on first use, once per process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from service.vectors import l2_normalize


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
        """Embed search queries; returns ``(len(texts), dim)`` float32, rows of norm 1.

        The in-process embedders make each row depend on its text alone, not on the other texts of
        the call (docs/EMBEDDERS.md), so a search ranks the same whatever its query cache held."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents; returns ``(len(texts), dim)`` float32, rows of norm 1."""


def embed_each_alone(texts: Sequence[str], encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """``encode`` called on one text at a time, the rows stacked: each row depends on its text alone.

    How queries are embedded (docs/EMBEDDERS.md): in a batch, a model's matrix products round a row
    differently with its neighbours.
    """
    if not texts:
        return encode([])
    return np.vstack([encode([text]) for text in texts])


def embed_in_windows(texts: Sequence[str], windows: Callable[[str], list[str]],
                     encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """Embed texts that may exceed a model's input limit without dropping any part of them.

    Each text is cut by ``windows`` into pieces the model takes whole; a text's vector is the mean of
    its pieces' vectors weighted by their length, L2-normalised (mean pooling over the whole text,
    as the model would pool one long input). A text that fits is one piece and embeds as before.
    Long questions put the question proper at the end, which a model's silent truncation would cut.

    Args:
        texts: the texts.
        windows: text -> consecutive pieces covering all of it (``[text]`` when it fits).
        encode: the model's own batch embedding of pieces.
    """
    pieces: list[str] = []
    owners: list[int] = []
    for i, text in enumerate(texts):
        parts = windows(text) or [text]
        pieces.extend(parts)
        owners.extend([i] * len(parts))
    vectors = np.asarray(encode(pieces), dtype=np.float32)
    if len(pieces) == len(texts):
        return l2_normalize(vectors)
    weights = np.asarray([max(1, len(p)) for p in pieces], dtype=np.float32)
    out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
    np.add.at(out, np.asarray(owners), vectors * weights[:, None])
    return l2_normalize(out)


def character_windows(text: str, max_chars: int) -> list[str]:
    """``text`` cut into consecutive pieces of at most ``max_chars`` characters, at whitespace where possible."""
    pieces = []
    start = 0
    while len(text) - start > max_chars:
        end = text.rfind(" ", start + max_chars // 2, start + max_chars)
        end = end if end > start else start + max_chars
        pieces.append(text[start:end])
        start = end
    pieces.append(text[start:])
    return pieces
