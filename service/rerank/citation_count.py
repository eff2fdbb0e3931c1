"""How many articles an answer cites: a count predicted per question, learned from training questions.

An answer is a *set* of citations, scored by the F1 of that set. The best teams of the Swiss legal
retrieval competitions estimated, per question, how many citations the answer needs. Exam questions
differ a lot: a true/false item cites one article, a case study a dozen.

:class:`CitationCounter` is a Poisson regression from question features (:data:`COUNT_FEATURES`) to
the number of gold articles. The set returned is the top ``round(multiplier · expected count)`` of
the ranking (at least 1, at most :data:`MAX_SET`), optionally cut earlier where the ranking's scores
fall off a cliff (:func:`~service.retrieval.cut.cliff_cut`: the count says how many citations the
answer needs, the cliff where the ranker stops being sure). The multiplier, and whether the cliff
caps the count, are chosen on rankings the counter did not see (cross-fitted in ``lexsearch
train``) to maximise the mean set F1: with a ranking that finds a third of the gold articles,
returning fewer hits than the answer cites scores better.

Example::

    counter = CitationCounter.fit(texts, counts)
    counter.expected("Ist die Aussage richtig oder falsch? ...")   # 1.4
    counter.set_size(question)                                      # 1
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from service.corpus.citations import extract
from service.retrieval.cut import cliff_cut
from service.retrieval.long_query import sentences

COUNT_FEATURES: tuple[str, ...] = ("log_chars", "log_sentences", "question_marks", "options", "article_citations",
                                   "laws_cited", "true_false")
MAX_SET = 10
MULTIPLIERS = (0.25, 0.35, 0.5, 0.65, 0.8, 1.0, 1.25, 1.5)
ALPHA = 1.0
"""L2 penalty of the Poisson regression (the features are standardised)."""

_OPTION = re.compile(r"(?:^|\s)\(?[a-hA-H]\)\s")
_TRUE_FALSE = re.compile(r"\b(?:richtig|falsch|zutreffend|true|false|vrai|faux|vero|falso|corrett[oa])\b", re.I)


def question_features(text: str) -> np.ndarray:
    """The count features of one question (:data:`COUNT_FEATURES`), unscaled."""
    citations = extract(text)
    return np.asarray([
        math.log1p(len(text)),
        math.log1p(len(sentences(text))),
        float(text.count("?") + text.count("？")),
        float(len(_OPTION.findall(text))),
        float(len(citations)),
        float(len({c.law for c in citations if c.law})),
        float(bool(_TRUE_FALSE.search(text))),
    ], dtype=np.float64)


def set_f1(labels: Sequence[float], size: int, gold: int) -> float:
    """F1 of the first ``size`` hits of a ranking whose relevance labels are ``labels``, with ``gold``
    relevant articles in all (some of which the ranking may lack)."""
    hits = float(sum(labels[:size]))
    if hits == 0 or size == 0 or gold == 0:
        return 0.0
    precision, recall = hits / min(size, max(1, len(labels))), hits / gold
    return 2 * precision * recall / (precision + recall)


class CitationCounter:
    """Expected number of cited articles per question, and the set size it implies.

    Args:
        mean, scale: standardisation of the features.
        coef, intercept: the Poisson regression (``log λ = intercept + coef · z``).
        multiplier: set size = ``round(multiplier · λ)``.
        fixed_k: the best fixed set size on the training rankings (for comparison).
        cliff: whether the score cliff of the ranking caps the set size.
    """

    def __init__(self, mean: Sequence[float], scale: Sequence[float], coef: Sequence[float], intercept: float,
                 multiplier: float = 1.0, fixed_k: int = 3, cliff: bool = False) -> None:
        self.mean = np.asarray(mean, dtype=np.float64)
        self.scale = np.asarray(scale, dtype=np.float64)
        self.coef = np.asarray(coef, dtype=np.float64)
        self.intercept = float(intercept)
        self.multiplier = float(multiplier)
        self.fixed_k = int(fixed_k)
        self.cliff = bool(cliff)
        if not len(self.mean) == len(self.scale) == len(self.coef) == len(COUNT_FEATURES):
            raise ValueError(f"a citation counter needs {len(COUNT_FEATURES)} coefficients")

    @classmethod
    def fit(cls, texts: Sequence[str], counts: Sequence[int], *, alpha: float = ALPHA) -> CitationCounter:
        """Fit the regression on questions and their gold-article counts (multiplier 1).

        Raises:
            ValueError: for fewer than two questions.
        """
        from sklearn.linear_model import PoissonRegressor

        if len(texts) < 2:
            raise ValueError("the citation counter needs at least two training questions")
        x = np.asarray([question_features(t) for t in texts])
        mean, scale = x.mean(axis=0), x.std(axis=0)
        scale[scale == 0] = 1.0
        model = PoissonRegressor(alpha=alpha, max_iter=1000).fit((x - mean) / scale, np.asarray(counts, dtype=float))
        return cls(mean, scale, model.coef_, float(model.intercept_))

    def expected(self, text: str) -> float:
        """The expected number of cited articles."""
        z = (question_features(text) - self.mean) / self.scale
        return float(math.exp(min(30.0, self.intercept + float(self.coef @ z))))

    def set_size(self, text: str, scores: Sequence[float] = (), *, most: int = MAX_SET) -> int:
        """How many hits to return: ``round(multiplier · expected)`` within ``[1, most]``, cut at the
        first cliff of the ranking's ``scores`` (best first) when :attr:`cliff` is set."""
        return _size(self.multiplier * self.expected(text), scores if self.cliff else (), most)

    def tuned(self, expected: Sequence[float], rankings: Sequence[Sequence[float]],
              scores: Sequence[Sequence[float]], gold: Sequence[int]) -> CitationCounter:
        """A copy with the multiplier, the cliff switch and the fixed size that maximise the mean set F1
        on held-out rankings.

        Args:
            expected: each question's expected count from a counter that did not see it.
            rankings: each question's relevance labels in ranked order, from a ranker that did not see it.
            scores: the ranker's scores in the same order.
            gold: each question's number of gold articles.
        """
        def mean_f1(sizes: Sequence[int]) -> float:
            return float(np.mean([set_f1(r, s, g) for r, s, g in zip(rankings, sizes, gold, strict=True)]))

        def count_f1(m: float, cliff: bool) -> float:
            return mean_f1([_size(m * e, s if cliff else (), MAX_SET) for e, s in zip(expected, scores, strict=True)])

        multiplier, cliff = max(((m, c) for c in (False, True) for m in MULTIPLIERS),
                                key=lambda mc: (count_f1(*mc), -abs(mc[0] - 1.0), not mc[1]))
        fixed_k = max(range(1, MAX_SET + 1), key=lambda k: (mean_f1([k] * len(gold)), -k))
        return CitationCounter(self.mean, self.scale, self.coef, self.intercept, multiplier, fixed_k, cliff)

    def to_json(self) -> dict[str, Any]:
        return {"features": list(COUNT_FEATURES), "mean": self.mean.tolist(), "scale": self.scale.tolist(),
                "coef": self.coef.tolist(), "intercept": self.intercept, "multiplier": self.multiplier,
                "fixed_k": self.fixed_k, "cliff": self.cliff}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CitationCounter:
        if list(data.get("features", [])) != list(COUNT_FEATURES):
            raise ValueError(f"citation counter features {data.get('features')} differ from {list(COUNT_FEATURES)}")
        return cls(data["mean"], data["scale"], data["coef"], data["intercept"], data["multiplier"],
                   data["fixed_k"], bool(data.get("cliff", False)))


def _size(count: float, scores: Sequence[float], most: int) -> int:
    """``round(count)`` within ``[1, most]``, no larger than the score cliff of ``scores`` (if given)."""
    size = max(1, min(most, round(count)))
    if len(scores) > 1:
        size = min(size, cliff_cut(list(scores)[:50], max_k=most).returned)
    return size
