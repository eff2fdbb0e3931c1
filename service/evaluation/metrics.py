"""Retrieval metrics with binary relevance: Recall@k, MRR@k, nDCG@k, and set precision/recall/F1.

Each function scores one query; :func:`mean` averages over queries. A query without relevant
documents scores 0 everywhere (datasets here list only queries that have some).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence


def recall_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """Share of the relevant documents found in the top ``k``."""
    if not relevant:
        return 0.0
    return len(set(ranked[:k]) & relevant) / len(relevant)


def mrr_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """Reciprocal rank of the first relevant document within the top ``k`` (0 if none)."""
    for rank, doc_id in enumerate(ranked[:k], start=1):
        if doc_id in relevant:
            return 1.0 / rank
    return 0.0


def ndcg_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """nDCG with binary gains: DCG of the top ``k`` over the DCG of an ideal ranking."""
    if not relevant:
        return 0.0
    dcg = sum(1.0 / math.log2(rank + 1) for rank, d in enumerate(ranked[:k], start=1) if d in relevant)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(k, len(relevant)) + 1))
    return dcg / ideal


def set_scores(returned: Iterable[str], relevant: set[str]) -> tuple[float, float, float]:
    """Precision, recall and F1 of a returned set (not a ranking)."""
    got = set(returned)
    if not got or not relevant:
        return 0.0, 0.0, 0.0
    hits = len(got & relevant)
    precision, recall = hits / len(got), hits / len(relevant)
    f1 = 0.0 if hits == 0 else 2 * precision * recall / (precision + recall)
    return precision, recall, f1


def mean(values: Iterable[float]) -> float:
    vals = list(values)
    return sum(vals) / len(vals) if vals else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation; 0 for an empty list."""
    if not values:
        return 0.0
    data = sorted(values)
    pos = (len(data) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)
