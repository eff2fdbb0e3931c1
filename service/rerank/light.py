"""The light reranker: a fixed linear score used where the learned model would be too slow or absent.

It prunes each rewrite's top-30 to the ten that join the pool, orders the pool between rounds
(the evidence the agents see), and is the ``none`` reranker's order. Its terms are the
retrieval score (z-scored within its list) plus the soft priors: ``0.3 · log P(law)`` (the soft
law prior measured on STARD), the article's training frequency and the votes of similar
training questions.

Example::

    scores = light_scores([h.score for h in hits], [h.doc_id for h in hits], priors)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from service.corpus.graph import CorpusGraph
from service.rerank.priors import ArticlePrior, MemoryVote
from service.retrieval.fusion import normalize_scores

LAW_WEIGHT = 0.3
PRIOR_WEIGHT = 0.25
MEMORY_WEIGHT = 3.0
LAW_FLOOR = 1e-3


@dataclass
class Priors:
    """The query's soft priors (all optional)."""

    graph: CorpusGraph | None = None
    law_probabilities: Mapping[str, float] = field(default_factory=dict)
    prior: ArticlePrior | None = None
    memory: Mapping[str, MemoryVote] = field(default_factory=dict)

    def bonus(self, doc_id: str) -> float:
        """The prior part of the light score of one document."""
        value = 0.0
        if self.law_probabilities and self.graph is not None:
            value += LAW_WEIGHT * math.log(self.law_probabilities.get(self.graph.law_of(doc_id), 0.0) + LAW_FLOOR)
        if self.prior is not None:
            value += PRIOR_WEIGHT * self.prior.log_count(doc_id)
        vote = self.memory.get(doc_id)
        if vote is not None:
            value += MEMORY_WEIGHT * vote.vote
        return value


def zscore(values: Sequence[float]) -> np.ndarray:
    """Per-list z-scores (zeros for a constant list)."""
    return normalize_scores(values, "zscore")


def light_scores(scores: Sequence[float], ids: Sequence[str], priors: Priors) -> list[float]:
    """z-scored retrieval scores plus each document's prior bonus."""
    z = zscore(scores)
    return [float(z[i]) + priors.bonus(doc_id) for i, doc_id in enumerate(ids)]
