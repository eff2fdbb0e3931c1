"""ArticlePrior and QuestionMemory: counts, votes and their stored forms."""

from __future__ import annotations

import numpy as np
import pytest

from service.rerank.priors import ArticlePrior, QuestionMemory

pytestmark = pytest.mark.unit

TOKENS = [["miete", "kaution"], ["miete", "kündigung"], ["erbe", "testament"], ["testament", "drohung"]]
GOLDS = [{"535", "551"}, {"573"}, {"1922"}, {"2078", "1922"}]
LAW = {"535": "BGB", "551": "BGB", "573": "BGB", "1922": "BGB", "2078": "BGB"}


def test_prior_counts_articles_and_laws() -> None:
    prior = ArticlePrior.fit(GOLDS, LAW.get)
    assert prior.count("1922") == 2 and prior.count("nope") == 0
    assert prior.log_count("1922") == pytest.approx(np.log(3))
    assert prior.law_share("1922", "BGB") == pytest.approx(2 / 4)  # of the 4 questions on the BGB
    assert prior.law_share("1922", "ZGB") == 0.0
    assert prior.top(1) == ["1922"]
    again = ArticlePrior.from_json(prior.to_json())
    assert again.counts == prior.counts and again.questions == 4


def test_memory_votes_for_the_gold_of_similar_questions() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((4, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    memory = QuestionMemory.fit(TOKENS, vectors, GOLDS)
    votes = memory.votes(["testament", "drohung"], vectors[3])
    assert next(iter(votes)) in {"2078", "1922"}
    assert votes["1922"].rank <= 2 and abs(sum(v.vote for v in votes.values()) - 1.0) < 1e-6
    assert all(0 < v.vote <= 1 for v in votes.values())
    terms_only = memory.votes(["kaution"], None)
    assert set(list(terms_only)[:2]) == {"535", "551"}


def test_memory_term_similarities_are_the_sparse_cosines() -> None:
    memory = QuestionMemory.fit(TOKENS, None, GOLDS)
    for tokens in (["miete", "kaution", "miete"], ["testament"], [], ["unbekannt"]):
        expected = (memory.term_rows @ memory.space.transform([tokens]).T).toarray().ravel()
        np.testing.assert_allclose(memory.similarities(tokens, None), expected, rtol=1e-6, atol=1e-7)
    assert memory.similarities(["erbe", "testament"], None)[2] == pytest.approx(1.0)


def test_memory_round_trips_through_arrays() -> None:
    vectors = np.eye(4, 8, dtype=np.float32)
    memory = QuestionMemory.fit(TOKENS, vectors, GOLDS)
    again = QuestionMemory.from_arrays(memory.to_arrays())
    assert again.golds == memory.golds and len(again) == 4
    np.testing.assert_allclose(again.similarities(["miete"], vectors[0]), memory.similarities(["miete"], vectors[0]),
                               atol=1e-3)
    no_vectors = QuestionMemory.from_arrays(QuestionMemory.fit(TOKENS, None, GOLDS).to_arrays())
    assert no_vectors.vectors is None and no_vectors.votes(["erbe"], None)
