"""The reranker interface: reorder a candidate pool. The output is always a subset of the input ids.

Rerankers that need more than the hits (features, document texts, an LLM budget) get them
through a :class:`RerankContext`, built by the pipeline.

Example::

    ranked = reranker.rerank(Query("Kaution zurück"), pool, k=10, context=context)
    ranked[0].scores["learned"], ranked[0].ranks["learned"]
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from service.corpus.model import Hit, LegalDoc, Query

if TYPE_CHECKING:
    from service.llm.budget import CallBudget


@dataclass
class RerankContext:
    """What a reranker may use besides the hits (all optional).

    Attributes:
        features: one row per hit, columns named by ``feature_names``.
        feature_names: the column names of ``features``.
        docs: fetched documents by id (texts for LLM and cross-encoder rerankers).
        fallback: the order to fall back to (hit ids, best first), e.g. the learned order.
        budget: the query's LLM budget.
        notes: what the reranker did (fallbacks, model used), for the trace; filled by the reranker.
    """

    features: np.ndarray | None = None
    feature_names: Sequence[str] = ()
    docs: dict[str, LegalDoc] = field(default_factory=dict)
    fallback: list[str] = field(default_factory=list)
    budget: CallBudget | None = None
    notes: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Reranker(Protocol):
    """Reorders hits; returns at most ``k`` of them, each input id at most once."""

    name: str

    def rerank(self, query: Query, hits: Sequence[Hit], *, k: int, context: RerankContext | None = None) -> list[Hit]:
        """The ``k`` best of ``hits`` by this reranker, with ``scores[name]`` and ``ranks[name]`` set."""


def ordered(hits: Sequence[Hit], scores: Sequence[float], label: str, k: int) -> list[Hit]:
    """Hits sorted by ``scores`` (ties keep input order), cut to ``k``, with score and rank recorded."""
    order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))[:k]
    out = []
    for rank, i in enumerate(order, start=1):
        hit = hits[i]
        hit.score = float(scores[i])
        hit.scores[label] = float(scores[i])
        hit.ranks[label] = rank
        out.append(hit)
    return out


def in_order(hits: Sequence[Hit], ids: Sequence[str], label: str, k: int) -> list[Hit]:
    """Hits in the order of ``ids`` (ids not among the hits are ignored; hits not named follow in
    their input order), cut to ``k``; the score is a descending rank score."""
    sequence = _in_id_order(hits, ids)
    n = len(sequence)
    return ordered(sequence, [float(n - r) for r in range(n)], label, k)


def _in_id_order(hits: Sequence[Hit], ids: Sequence[str]) -> list[Hit]:
    """``hits`` in the order of ``ids``, then the hits not named, in input order (each hit once)."""
    by_id = {h.doc_id: h for h in hits}
    return [by_id[i] for i in dict.fromkeys([i for i in ids if i in by_id] + [h.doc_id for h in hits])]


class PoolOrderReranker:
    """No model: keeps the pool's heuristic order (``context.fallback``, else the input order).

    When the hits' own scores already descend in that order (the pool order's light scores do),
    they are kept, so a score-cliff cut downstream still sees real gaps; otherwise the score is a
    descending rank score.
    """

    name = "none"

    def rerank(self, query: Query, hits: Sequence[Hit], *, k: int, context: RerankContext | None = None) -> list[Hit]:
        ids = context.fallback if context is not None and context.fallback else [h.doc_id for h in hits]
        sequence = _in_id_order(hits, ids)
        scores = [h.score for h in sequence]
        if all(a >= b for a, b in itertools.pairwise(scores)):
            return ordered(sequence, scores, self.name, k)
        return in_order(hits, ids, self.name, k)
