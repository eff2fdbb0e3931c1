"""Vector pseudo-relevance feedback: the kNN side's query moved toward the first BM25 hits.

For a long question the hybrid pipeline's kNN list is made with ``unit(q + weight * unit(c))``,
where ``q`` is the question's unit vector (its passage mean) and ``c`` the mean of the stored vectors
of BM25's first hits (of a work with language versions, the version nearest the question). The kNN
side then searches near what the question's words found as well as near the question itself. The
passage mean of long case facts is diffuse: its plain kNN list is mostly noise and costs BM25 ranks
in the fusion; the moved query keeps it near the subject BM25 found (docs/FUSION.md, "Feedback for
the kNN side of long questions").

Example::

    q2 = feedback_vector(q, [backend.vectors(index, ids)[i] for i in ids], weight=0.5)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from service.vectors import l2_normalize


def feedback_vector(query: np.ndarray, documents: Sequence[np.ndarray], weight: float) -> np.ndarray:
    """The query vector moved toward the feedback documents, as a float32 unit vector.

    Args:
        query: the question's embedding.
        documents: per feedback document, its stored vectors, one row per version (shape
            ``(versions, dim)`` or ``(dim,)``); the version nearest the question stands for it.
        weight: how far to move: the centroid's share against the question's (0 = not at all).

    Returns:
        ``unit(q + weight * unit(mean of the documents))``; the question's own unit vector when there
        are no documents or ``weight`` is 0.
    """
    q = l2_normalize(query)[0]
    if weight <= 0 or not documents:
        return q
    nearest = []
    for rows in documents:
        rows = np.asarray(rows, dtype=np.float32).reshape(-1, q.shape[0])
        nearest.append(rows[int(np.argmax(rows @ q))])
    centroid = l2_normalize(np.mean(nearest, axis=0))[0]
    return l2_normalize(q + weight * centroid)[0]
