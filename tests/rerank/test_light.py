"""The light reranker: z-scored retrieval scores plus the soft priors."""

from __future__ import annotations

import math

import pytest

from service.corpus.graph import CorpusGraph
from service.corpus.model import LegalDoc
from service.rerank.light import LAW_FLOOR, LAW_WEIGHT, Priors, light_scores, zscore
from service.rerank.priors import ArticlePrior, MemoryVote

pytestmark = pytest.mark.unit


def test_zscore_handles_constant_and_empty_lists() -> None:
    assert list(zscore([1.0, 1.0])) == [0.0, 0.0] and len(zscore([])) == 0
    assert zscore([1.0, 3.0]).tolist() == [-1.0, 1.0]


def test_priors_lift_the_predicted_law_the_frequent_and_the_remembered() -> None:
    graph = CorpusGraph.build([LegalDoc(id="a", citation="Art. 1 OR", text="x", law="OR"),
                               LegalDoc(id="b", citation="Art. 1 ZGB", text="y", law="ZGB")])
    priors = Priors(graph=graph, law_probabilities={"OR": 0.9, "ZGB": 0.1})
    scores = light_scores([1.0, 1.0], ["a", "b"], priors)
    assert scores[0] - scores[1] == pytest.approx(LAW_WEIGHT * (math.log(0.9 + LAW_FLOOR) - math.log(0.1 + LAW_FLOOR)))
    remembered = Priors(memory={"b": MemoryVote(0.5, 0.9, 1)}, prior=ArticlePrior({"b": 3}, {}, 10))
    assert light_scores([2.0, 1.0], ["a", "b"], remembered)[1] > light_scores([2.0, 1.0], ["a", "b"], Priors())[1]
    assert light_scores([2.0, 1.0], ["a", "b"], Priors()) == [1.0, -1.0]
