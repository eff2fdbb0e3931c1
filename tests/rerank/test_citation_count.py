"""The citation counter: question features, the Poisson fit, the tuned multiplier, JSON round trip."""

from __future__ import annotations

import numpy as np
import pytest

from service.rerank.citation_count import COUNT_FEATURES, CitationCounter, question_features, set_f1

pytestmark = pytest.mark.unit

TRUE_FALSE = "Die Aussage lautet: Der Mieter haftet immer. Ist sie richtig oder falsch?"
CASE = ("A kauft von B ein Auto. " * 30 + "Das Auto hat einen Mangel; B kannte ihn. Welche Ansprüche hat A "
        "nach Art. 197 OR und Art. 41 OR? Welche Fristen gelten? Und gegen wen kann A vorgehen?")


def test_features_describe_the_question() -> None:
    f = dict(zip(COUNT_FEATURES, question_features(CASE), strict=True))
    assert f["question_marks"] == 3 and f["article_citations"] == 2 and f["laws_cited"] == 1
    assert f["true_false"] == 0 and dict(zip(COUNT_FEATURES, question_features(TRUE_FALSE), strict=True))[
        "true_false"] == 1
    assert question_features("a) Art. 20 OR b) Art. 97 OR c) Art. 197 OR")[COUNT_FEATURES.index("options")] == 3


def test_set_f1_counts_hits_against_the_whole_gold_set() -> None:
    assert set_f1([1, 0, 1, 0], 2, 4) == pytest.approx(2 * 0.5 * 0.25 / 0.75)
    assert set_f1([0, 0], 2, 1) == 0.0 and set_f1([1], 5, 1) == 1.0


def test_fit_predicts_more_citations_for_case_studies_and_tunes_the_multiplier() -> None:
    texts = [TRUE_FALSE] * 6 + [CASE] * 6
    counts = [1] * 6 + [6] * 6
    counter = CitationCounter.fit(texts, counts)
    assert counter.expected(TRUE_FALSE) < 2 < 4 < counter.expected(CASE)
    # Rankings that find one article at the top: returning one hit scores best for every question.
    rankings = [np.asarray([1.0] + [0.0] * 9)] * 12
    flat = [np.linspace(1.0, 0.9, 10)] * 12
    tuned = counter.tuned([counter.expected(t) for t in texts], rankings, flat, counts)
    assert tuned.fixed_k == 1 and tuned.set_size(TRUE_FALSE) == 1 and not tuned.cliff
    again = CitationCounter.from_json(tuned.to_json())
    assert again.multiplier == tuned.multiplier and again.set_size(CASE) == tuned.set_size(CASE)


def test_the_score_cliff_caps_the_count_when_that_scores_better() -> None:
    texts = [CASE] * 8
    counts = [4] * 8
    counter = CitationCounter.fit([TRUE_FALSE, *texts], [1, *counts])
    # Half the questions have one good hit then a cliff, the other half four good hits in a flat run.
    cliffed = (np.asarray([1.0] + [0.0] * 9), np.asarray([9.0] + [1.0] * 9 + [0.0]))
    flat = (np.asarray([1.0] * 4 + [0.0] * 6), np.asarray([5.0, 4.9, 4.8, 4.7] + [0.1] * 6))
    rankings = [cliffed, flat] * 4
    tuned = counter.tuned([4.0] * 8, [r for r, _ in rankings], [s for _, s in rankings], counts)
    assert tuned.cliff and tuned.multiplier == 1.0
    assert tuned.set_size(CASE, cliffed[1]) == 1 and tuned.set_size(CASE, flat[1]) == 4
    assert tuned.set_size(CASE) == round(tuned.expected(CASE))  # no scores: the count alone


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="two training"):
        CitationCounter.fit([CASE], [3])
    with pytest.raises(ValueError, match="features"):
        CitationCounter.from_json({"features": ["x"]})
