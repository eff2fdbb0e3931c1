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


def zscore_within_depth(scores: Sequence[float], depth: int) -> tuple[np.ndarray, float]:
    """Z-scores of a list that is shorter than the ``depth`` it was asked for, and the z-score of 0.

    Such a list holds every document its retriever matched: the rest of the depth scores 0 (for BM25,
    no query term). The scale is that of the full depth, the list padded with zeros, so a handful of
    matches keeps the lead a term match earns over a non-match instead of being centred on itself.
    """
    arr = np.asarray(scores, dtype=np.float64)
    padded = normalize_scores(np.concatenate([arr, np.zeros(max(depth - arr.size, 0))]), "zscore")
    return padded[:arr.size], float(padded[arr.size]) if padded.size > arr.size else 0.0


def linear(lists: Mapping[str, Sequence[Hit]], *, weights: Mapping[str, float] | None = None,
           normalization: str = "zscore", label: str = "linear", sections: Mapping[str, str] | None = None,
           shared: Mapping[str, float] | None = None, depths: Mapping[str, int] | None = None) -> list[Hit]:
    """Weighted sum of per-list normalised scores.

    A document missing from a list gets that list's minimum normalised score (it scored below
    everything the retriever returned), so documents found by one retriever only are not
    pushed above those found by both.

    With ``depths`` (list name -> the number of hits it was asked for), a named list that came back
    shorter is read as complete, its missing documents scoring 0: under z-score normalisation it is
    scaled over the whole depth (:func:`zscore_within_depth`) and a missing document gets the z-score
    of 0. Name only lists whose non-matches score 0 (BM25). Min-max normalisation ignores ``depths``:
    it keeps the rule of the engines' own hybrid search, where a list's minimum and a missing
    document both map to 0.

    With ``sections`` (document id -> its section) and ``shared`` (list name -> share ``s``), a list
    also speaks for the section of what it found: in that list every candidate scores at least
    ``floor + s * (best - floor)``, where ``best`` is the list's best normalised score in the
    candidate's section and ``floor`` what a missing document gets (:func:`section_lift`).

    Args:
        lists: ranked hit lists by name, each hit's ``score`` being that retriever's score.
        weights: per-list weights (default 1.0 each).
        normalization: ``minmax`` or ``zscore``.
        label: the key under which the fused score and rank are stored.
        sections: the section of each candidate that has one (others are left alone).
        shared: the share of its section's best score that each named list grants (0 = none).
        depths: the depth each named list was asked for (see above).
    """
    weights = weights or {}
    shared = shared or {}
    depths = depths or {}
    merged = _merge_inputs(lists)
    fused: dict[str, float] = dict.fromkeys(merged, 0.0)
    for name, hits in lists.items():
        depth = depths.get(name, 0)
        if normalization == "zscore" and 0 < len(hits) < depth:
            norm, floor = zscore_within_depth([h.score for h in hits], depth)
        else:
            norm = normalize_scores([h.score for h in hits], normalization)
            floor = float(norm.min()) if norm.size else 0.0
        values = dict(zip([h.doc_id for h in hits], norm.tolist(), strict=True))
        share = float(shared.get(name, 0.0))
        if share > 0 and sections:
            values = section_lift(values, list(merged), sections, share=share, floor=floor)
        w = float(weights.get(name, 1.0))
        value_of = values.get
        for doc_id in merged:
            fused[doc_id] += w * value_of(doc_id, floor)
    return _ordered(merged, fused, label, _first_seen(lists))


def section_lift(values: Mapping[str, float], candidates: Sequence[str], sections: Mapping[str, str], *,
                 share: float, floor: float) -> dict[str, float]:
    """One list's normalised scores, each candidate raised to at least ``floor + share * (best - floor)``,
    where ``best`` is the list's best score in the candidate's section.

    For the kNN side of statute search: an embedding of a short article tells its subject (its section)
    better than the article itself, whose neighbours read alike; BM25 tells the article. A candidate
    without a section, or whose section the list did not find, keeps its own score (or none).

    Example: kNN finds SchKG Art. 76 with 3.86 (z-score; list minimum -1.03) and Art. 74 of the same
    section with -0.46; with ``share=0.5`` Art. 74 gets ``-1.03 + 0.5 * (3.86 + 1.03) = 1.415``.
    """
    best: dict[str, float] = {}
    for doc_id, value in values.items():
        section = sections.get(doc_id)
        if section is not None and value > best.get(section, -math.inf):
            best[section] = value
    out = dict(values)
    for doc_id in candidates:
        section = sections.get(doc_id)
        if section is None or section not in best:
            continue
        lifted = floor + share * (best[section] - floor)
        if lifted > out.get(doc_id, floor):
            out[doc_id] = lifted
    return out
