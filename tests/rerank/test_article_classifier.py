"""The article classifier: question terms to training articles, its evidence, and its stored form."""

from __future__ import annotations

import numpy as np
import pytest

from service.rerank.article_classifier import ArticleClassifier

pytestmark = pytest.mark.unit

QUESTIONS = [
    (["vermiet", "kaution", "zurueck"], {"BGB-551"}),
    (["kaution", "mietend", "konto"], {"BGB-551"}),
    (["testament", "erb", "handschrift"], {"BGB-2247"}),
    (["testament", "notar", "erb"], {"BGB-2232", "BGB-2247"}),
    (["kuendig", "frist", "wohnung"], {"BGB-573c"}),
    (["kuendig", "vermiet", "eigenbedarf"], {"BGB-573"}),
]


def _fit() -> ArticleClassifier:
    clf = ArticleClassifier.fit([q for q, _ in QUESTIONS], [g for _, g in QUESTIONS])
    assert clf is not None
    return clf


def test_each_training_article_is_found_by_its_own_terms() -> None:
    clf = _fit()
    assert sorted(clf.articles) == ["BGB-2232", "BGB-2247", "BGB-551", "BGB-573", "BGB-573c"]
    assert clf.top(clf.scores(["kaution"]), 1) == ["BGB-551"]
    assert clf.top(clf.scores(["handschrift", "testament"]), 1) == ["BGB-2247"]
    assert clf.top(clf.scores(["eigenbedarf"]), 1) == ["BGB-573"]
    assert len(clf.top(clf.scores(["kaution"]), 50)) == 5


def test_evidence_gives_score_z_value_and_rank_of_known_articles_only() -> None:
    clf = _fit()
    evidence = clf.evidence(clf.scores(["kaution"]), ["BGB-551", "BGB-2247", "BGB-1"])
    assert set(evidence) == {"BGB-551", "BGB-2247"}
    score, z, rank = evidence["BGB-551"]
    assert rank == 1 and z > 0 and score > evidence["BGB-2247"][0]
    scores = clf.scores(["kaution"])
    assert z == pytest.approx((scores.max() - scores.mean()) / scores.std(), rel=1e-5)
    ranks = sorted(r for _, _, r in clf.evidence(clf.scores(["kaution"]), clf.articles).values())
    assert ranks == [1, 2, 3, 4, 5]


def test_unknown_terms_leave_only_the_intercepts() -> None:
    clf = _fit()
    assert np.array_equal(clf.scores(["unbekannt"]), clf.bias)


def test_stored_arrays_give_the_same_scores() -> None:
    clf = _fit()
    again = ArticleClassifier.from_arrays(clf.to_arrays())
    assert again.articles == clf.articles
    for terms in (["kaution"], ["testament", "erb"], ["frist"]):
        assert np.array_equal(again.scores(terms), clf.scores(terms))


def test_small_weights_are_pruned() -> None:
    clf = _fit()
    data = np.abs(clf.weights.data)
    assert data.min() >= 0.015 * data.max()


def test_two_articles_get_one_column_each_and_one_article_none() -> None:
    two = ArticleClassifier.fit([["kaution"], ["testament"]], [{"A"}, {"B"}])
    assert two is not None and two.top(two.scores(["kaution"]), 2) == ["A", "B"]
    assert two.top(two.scores(["testament"]), 1) == ["B"]
    assert ArticleClassifier.fit([["kaution"], ["miete"]], [{"A"}, {"A"}]) is None
    assert ArticleClassifier.fit([["kaution"]], [set()]) is None
