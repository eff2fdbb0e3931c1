"""Question → gold article, learned directly: a linear classifier with one class per training article.

The question memory votes with the gold of the most similar training questions; this classifier
instead learns, per article, which question terms speak for it and which against it (one-vs-rest
linear SVM over the tf-idf of the question's analysed terms). On GerLayQA, where four in five dev
gold articles are gold for some training question, it scores MRR@10 0.30 on the held-out questions
on its own, against 0.27 for a vote of similar training questions (docs/BENCHMARKS.md, "The article
classifier"). Its best articles join the agentic pool, and its score, z-value and rank of every
candidate are reranker features.

Weights below :data:`PRUNE_SHARE` of the largest are dropped (about 94 % of them, without changing
the ranking measurably), so a folder stores a sparse matrix of a few megabytes.

Example::

    clf = ArticleClassifier.fit([["kaution", "miet"], ["testament", "erb"]], [{"BGB-551"}, {"BGB-2247"}])
    clf.top(clf.scores(["kaution"]), 1)  # ['BGB-551']
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import sparse

from service.retrieval.tfidf import TfidfSpace

C = 0.1
"""The SVM's inverse regularisation (chosen on GerLayQA `fit` → `dev`; 0.1–0.3 score alike)."""
PRUNE_SHARE = 0.015
"""Weights smaller than this share of the largest weight are set to zero."""


class ArticleClassifier:
    """Linear scores of every training article for a question.

    Args:
        space: tf-idf space of the training questions' terms.
        weights: ``(terms, articles)`` sparse weight matrix.
        bias: one intercept per article.
        articles: the article ids, in column order.
    """

    def __init__(self, space: TfidfSpace, weights: Any, bias: np.ndarray, articles: Sequence[str]) -> None:
        self.space = space
        self.weights = sparse.csr_matrix(weights, dtype=np.float32)
        self.bias = np.asarray(bias, dtype=np.float32)
        self.articles = list(articles)
        self.column = {d: j for j, d in enumerate(self.articles)}

    @classmethod
    def fit(cls, tokens: Sequence[Sequence[str]], golds: Sequence[set[str] | Sequence[str]], *,
            c: float = C) -> ArticleClassifier | None:
        """Train on questions' analysed terms and their gold articles (one sample per gold article).

        Returns ``None`` when fewer than two articles are gold (nothing to tell apart).
        """
        from sklearn.svm import LinearSVC

        rows = [(i, d) for i, gold in enumerate(golds) for d in sorted(gold)]
        if len({d for _, d in rows}) < 2:
            return None
        space = TfidfSpace.fit(tokens)
        x = space.transform(tokens)[[i for i, _ in rows]]
        with warnings.catch_warnings():
            # Many articles and few questions each is what this classifier is for; sklearn's guess
            # that such labels are a regression target would only clutter `lexsearch train`'s output.
            warnings.filterwarnings("ignore", message="The number of unique classes is greater than 50%",
                                    category=UserWarning)
            model = LinearSVC(C=c, random_state=0).fit(x, [d for _, d in rows])
        coef = np.asarray(model.coef_, dtype=np.float32)
        bias = np.asarray(model.intercept_, dtype=np.float32)
        articles = [str(d) for d in model.classes_]
        if len(articles) == 2:  # a binary SVM has one weight row, for the second class
            coef, bias = np.vstack([-coef, coef]), np.concatenate([-bias, bias])
        coef[np.abs(coef) < PRUNE_SHARE * float(np.abs(coef).max(initial=0.0))] = 0.0
        return cls(space, sparse.csr_matrix(coef.T), bias, articles)

    def __len__(self) -> int:
        return len(self.articles)

    def scores(self, tokens: Sequence[str]) -> np.ndarray:
        """The question's score for every article (in :attr:`articles` order)."""
        cols, vals = self.space.row(tokens)
        out = self.bias.copy()
        w = self.weights
        for col, val in zip(cols.tolist(), vals.tolist(), strict=True):
            lo, hi = w.indptr[col], w.indptr[col + 1]
            out[w.indices[lo:hi]] += w.data[lo:hi] * val
        return out

    def top(self, scores: np.ndarray, n: int) -> list[str]:
        """The ``n`` best articles by ``scores`` (of :meth:`scores`), best first (ties by id)."""
        order = np.argsort(-scores, kind="stable")[:n]  # articles are sorted: ties by id
        return [self.articles[j] for j in order]

    def evidence(self, scores: np.ndarray, ids: Sequence[str]) -> dict[str, tuple[float, float, int]]:
        """For each of ``ids`` that is a training article: its score in ``scores`` (of :meth:`scores`),
        the score's z-value over all articles, and its rank among them (1 = best)."""
        z = (scores - scores.mean()) / (float(scores.std()) or 1.0)
        rank = np.empty(len(scores), dtype=np.int64)
        rank[np.argsort(-scores, kind="stable")] = np.arange(1, len(scores) + 1)
        out = {}
        for d in ids:
            j = self.column.get(d)
            if j is not None:
                out[d] = (float(scores[j]), float(z[j]), int(rank[j]))
        return out

    def to_arrays(self) -> dict[str, np.ndarray]:
        w = self.weights
        return {**self.space.to_arrays("space_"), "indptr": w.indptr.astype(np.int64),
                "indices": w.indices.astype(np.int32), "data": w.data.astype(np.float32),
                "bias": self.bias, "articles": np.asarray(self.articles, dtype=np.str_)}

    @classmethod
    def from_arrays(cls, arrays: Any) -> ArticleClassifier:
        space = TfidfSpace.from_arrays(arrays, "space_")
        articles = [str(d) for d in arrays["articles"]]
        weights = sparse.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]),
                                    shape=(space.dim, len(articles)), dtype=np.float32)
        return cls(space, weights, arrays["bias"], articles)
