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
    tuned = counter.tuned([counter.expected(t) for t in texts], rankings, counts)
    assert tuned.fixed_k == 1 and tuned.set_size(TRUE_FALSE) == 1
    again = CitationCounter.from_json(tuned.to_json())
    assert again.multiplier == tuned.multiplier and again.set_size(CASE) == tuned.set_size(CASE)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="two training"):
        CitationCounter.fit([CASE], [3])
    with pytest.raises(ValueError, match="features"):
        CitationCounter.from_json({"features": ["x"]})
