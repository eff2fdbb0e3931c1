"""Hybrid fusion of ranked lists: reciprocal rank fusion and linear score fusion.

Pure functions over lists of :class:`~service.corpus.model.Hit`. Fused hits keep every input's
score and rank in ``scores``/``ranks`` (a retriever that did not find a document has no entry),
and their ``provenance`` lists are merged.

Example::

    fused = rrf({"bm25": bm25_hits, "knn": knn_hits}, k=60)
    fused[0].scores   # {'bm25': 14.2, 'knn': 0.63, 'rrf': 0.0325}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from service.corpus.model import Hit


def _merge_inputs(lists: Mapping[str, Sequence[Hit]]) -> dict[str, Hit]:
    merged: dict[str, Hit] = {}
    for hits in lists.values():
        for hit in hits:
            target = merged.get(hit.doc_id)
            if target is None:
                merged[hit.doc_id] = Hit(doc_id=hit.doc_id, score=0.0, scores=dict(hit.scores),
                                         ranks=dict(hit.ranks), provenance=list(hit.provenance), doc=hit.doc)
            else:
                for key, value in hit.scores.items():
                    target.scores.setdefault(key, value)
                for key, value in hit.ranks.items():
                    target.ranks.setdefault(key, value)
                target.provenance.extend(p for p in hit.provenance if p not in target.provenance)
                target.doc = target.doc or hit.doc
    return merged


def _ordered(merged: dict[str, Hit], fused: dict[str, float], label: str, first_seen: list[str]) -> list[Hit]:
    order = {doc_id: i for i, doc_id in enumerate(first_seen)}
    ranked = sorted(merged.values(), key=lambda h: (-fused[h.doc_id], order[h.doc_id]))
    for rank, hit in enumerate(ranked, start=1):
        hit.score = fused[hit.doc_id]
        hit.scores[label] = hit.score
        hit.ranks[label] = rank
    return ranked


def _first_seen(lists: Mapping[str, Sequence[Hit]]) -> list[str]:
    seen: dict[str, None] = {}
    depth = max((len(h) for h in lists.values()), default=0)
    for i in range(depth):  # interleave, so ties favour better ranks in any list
        for hits in lists.values():
            if i < len(hits):
                seen.setdefault(hits[i].doc_id, None)
    return list(seen)


def rrf(lists: Mapping[str, Sequence[Hit]], *, k: int = 60, weights: Mapping[str, float] | None = None,
        label: str = "rrf") -> list[Hit]:
    """Reciprocal rank fusion: ``score(d) = sum_i w_i / (k + rank_i(d))``.

    Args:
        lists: ranked hit lists by name (``"bm25"``, ``"knn"``, an agent name ...), best first.
        k: the RRF constant (60 in the original paper); larger values flatten the rank curve.
        weights: per-list weights (default 1.0 each).
        label: the key under which the fused score and rank are stored.

    Returns:
        One list, best first, each document once.
    """
    if k < 1:
        raise ValueError("rrf k must be >= 1")
    weights = weights or {}
    fused: dict[str, float] = {}
    for name, hits in lists.items():
        w = float(weights.get(name, 1.0))
        for rank, hit in enumerate(hits, start=1):
            fused[hit.doc_id] = fused.get(hit.doc_id, 0.0) + w / (k + rank)
    return _ordered(_merge_inputs(lists), fused, label, _first_seen(lists))


def normalize_scores(scores: Sequence[float], method: str) -> np.ndarray:
    """Scale one list's scores: ``minmax`` to [0, 1], or ``zscore`` to mean 0 and deviation 1.

    Constant lists map to all ones (minmax) or all zeros (zscore); an empty list stays empty.
    """
    arr = np.asarray(scores, dtype=np.float64)
    if arr.size == 0:
        return arr
    if method == "minmax":
        lo, hi = float(arr.min()), float(arr.max())
        return np.ones_like(arr) if math.isclose(hi, lo) else (arr - lo) / (hi - lo)
    if method == "zscore":
        std = float(arr.std())
        return np.zeros_like(arr) if std == 0 or not math.isfinite(std) else (arr - arr.mean()) / std
    raise ValueError(f"unknown normalisation {method!r}; use minmax or zscore")


def linear(lists: Mapping[str, Sequence[Hit]], *, weights: Mapping[str, float] | None = None,
           normalization: str = "zscore", label: str = "linear") -> list[Hit]:
    """Weighted sum of per-list normalised scores.

    A document missing from a list gets that list's minimum normalised score (it scored below
    everything the retriever returned), so documents found by one retriever only are not
    pushed above those found by both.

    Args:
        lists: ranked hit lists by name, each hit's ``score`` being that retriever's score.
        weights: per-list weights (default 1.0 each).
        normalization: ``minmax`` or ``zscore``.
        label: the key under which the fused score and rank are stored.
    """
    weights = weights or {}
    fused: dict[str, float] = {}
    per_list: list[tuple[float, dict[str, float], float]] = []
    for name, hits in lists.items():
        norm = normalize_scores([h.score for h in hits], normalization)
        floor = float(norm.min()) if norm.size else 0.0
        per_list.append((float(weights.get(name, 1.0)), {h.doc_id: float(s) for h, s in zip(hits, norm, strict=True)},
                         floor))
    merged = _merge_inputs(lists)
    for doc_id in merged:
        fused[doc_id] = sum(w * values.get(doc_id, floor) for w, values, floor in per_list)
    return _ordered(merged, fused, label, _first_seen(lists))
