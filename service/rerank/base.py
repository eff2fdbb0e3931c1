"""The reranker interface: reorder a candidate pool. The output is always a subset of the input ids.

Rerankers that need more than the hits (features, document texts, an LLM budget) get them
through a :class:`RerankContext`, built by the pipeline.

Example::

    ranked = reranker.rerank(Query("Kaution zurück"), pool, k=10, context=context)
    ranked[0].scores["learned"], ranked[0].ranks["learned"]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from service.corpus.model import Hit, LegalDoc, Query
from service.plugins import RERANKERS, resolve_reranker

if TYPE_CHECKING:
    from service.llm.budget import CallBudget
    from service.llm.client import LlmClient


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
    """Reorders hits; returns at most ``k`` of them, each input id at most once.

    Implementations are named in :data:`service.plugins.RERANKERS` and built with
    ``Class.from_parts(parts)`` (see :func:`choose_reranker`). Two flags declare what the pipeline
    must put into the :class:`RerankContext`:

    Attributes:
        name: the label of its scores and ranks on the hits (and in the trace).
        uses_features: scores the rows of ``context.features``; needs no fallback order.
        reads_documents: reorders the best of ``context.fallback`` by their texts (``context.docs``),
            so the pipeline hands it the best order it has and the documents of its top.
    """

    name: str
    uses_features: bool
    reads_documents: bool

    def rerank(self, query: Query, hits: Sequence[Hit], *, k: int, context: RerankContext | None = None) -> list[Hit]:
        """The ``k`` best of ``hits`` by this reranker, with ``scores[name]`` and ``ranks[name]`` set."""


@dataclass
class RerankerParts:
    """What rerankers are built from (``Class.from_parts``), supplied by the runtime and the pipeline.

    Attributes:
        learned: the trained model the pipeline prefers (``None`` without a model folder).
        llm: the LLM client (``None`` offline).
        llm_candidates: candidates shown to the LLM reranker.
        cross_encoder: the runtime's cross-encoder (raises ``ConfigError`` when none is configured).
    """

    learned: Reranker | None = None
    llm: LlmClient | None = None
    llm_candidates: int = 20
    cross_encoder: Callable[[], Reranker] | None = None


def choose_reranker(wanted: str, parts: RerankerParts) -> tuple[Reranker, str]:
    """The reranker of :data:`~service.plugins.RERANKERS` called ``wanted`` (``auto`` resolved), or, when
    its parts are missing, the one its entry falls back to; with a note saying why (else '').

    Example::

        choose_reranker("llm", RerankerParts(learned=None))   # (PoolOrderReranker, 'no LLM configured; ...')

    Raises:
        ConfigError: for ``cross-encoder`` without a configured model folder.
    """
    name = resolve_reranker(wanted, llm_enabled=parts.llm is not None)
    notes: list[str] = []
    while True:
        plugin = RERANKERS.entry(name)
        reranker = plugin.load().from_parts(parts)
        if reranker is not None:
            return reranker, "; ".join(notes)
        notes.append(plugin.options["unavailable"])
        name = plugin.options["fallback"]


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
    uses_features = False
    reads_documents = False

    @classmethod
    def from_parts(cls, parts: RerankerParts) -> PoolOrderReranker:
        return cls()

    def rerank(self, query: Query, hits: Sequence[Hit], *, k: int, context: RerankContext | None = None) -> list[Hit]:
        ids = context.fallback if context is not None and context.fallback else [h.doc_id for h in hits]
        sequence = _in_id_order(hits, ids)
        scores = [h.score for h in sequence]
        if all(a >= b for a, b in itertools.pairwise(scores)):
            return ordered(sequence, scores, self.name, k)
        return in_order(hits, ids, self.name, k)
