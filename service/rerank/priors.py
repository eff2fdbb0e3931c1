"""Priors learned from training questions: how often an article is the answer, and which articles
answered similar questions.

- :class:`ArticlePrior`: the number of training questions whose gold set holds each article.
  Statute questions concentrate on a few thousand articles, so this alone finds a fifth of the
  GerLayQA answers.
- :class:`QuestionMemory`: nearest training questions (cosine of tf-idf terms and of embeddings,
  mixed) vote for their gold articles. On STARD it reaches Recall@10 ≈ .40 on its own, and it
  supplies candidates that neither BM25 nor kNN rank high.

Both are keyed by corpus document ids, so they carry over to any dataset folder sharing the corpus.

Example::

    memory = QuestionMemory.fit(tokens, vectors, golds)
    memory.votes(query_tokens, query_vector)      # {'13498': MemoryVote(vote=0.61, best=0.83, rank=1), ...}
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from service.ordering import best_first
from service.retrieval.tfidf import TfidfSpace

NEIGHBOURS = 30
TEMPERATURE = 0.05
EMBEDDING_SHARE = 0.5
"""Weight of the embedding cosine in the question similarity (the rest is tf-idf); tuned on STARD fit."""


class ArticlePrior:
    """Gold counts of articles (and their laws) in the training questions.

    Example::

        prior = ArticlePrior.fit([{"a", "b"}, {"a"}], law_of={"a": "X", "b": "X"}.get)
        prior.count("a"), prior.log_count("a")        # (2, 1.0986...)
    """

    def __init__(self, counts: Mapping[str, int], law_counts: Mapping[str, int], questions: int) -> None:
        self.counts = dict(counts)
        self.law_counts = dict(law_counts)
        self.questions = max(1, questions)

    @classmethod
    def fit(cls, golds: Sequence[set[str] | Sequence[str]], law_of: Any) -> ArticlePrior:
        """Count gold articles; ``law_of(doc_id)`` gives each article's law."""
        counts: Counter[str] = Counter()
        laws: Counter[str] = Counter()
        for gold in golds:
            counts.update(sorted(set(gold)))
            laws.update(sorted({law_of(d) for d in gold}))
        return cls(counts, laws, len(golds))

    def count(self, doc_id: str) -> int:
        return self.counts.get(doc_id, 0)

    def log_count(self, doc_id: str) -> float:
        return math.log1p(self.counts.get(doc_id, 0))

    def law_share(self, doc_id: str, law: str) -> float:
        """Questions with this article over questions with its law (how central it is within the law)."""
        total = self.law_counts.get(law, 0)
        return self.counts.get(doc_id, 0) / total if total else 0.0

    def law_log_count(self, law: str) -> float:
        return math.log1p(self.law_counts.get(law, 0))

    def top(self, n: int) -> list[str]:
        """The ``n`` most frequent gold articles."""
        return [d for d, _ in best_first(self.counts, n)]

    def to_json(self) -> dict[str, Any]:
        return {"counts": self.counts, "law_counts": self.law_counts, "questions": self.questions}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ArticlePrior:
        return cls(data["counts"], data["law_counts"], int(data["questions"]))


@dataclass(frozen=True)
class MemoryVote:
    """One article's support from similar training questions."""

    vote: float
    """Share of the neighbours' (softmax-weighted) votes, 0..1."""
    best: float
    """Highest similarity of a neighbour that had this article as gold."""
    rank: int
    """1-based rank by vote."""


class QuestionMemory:
    """Training questions with their gold articles, searched by similarity.

    Args:
        space: tf-idf space of training-question terms.
        term_rows: the questions' tf-idf rows (sparse).
        vectors: the questions' embeddings (``None`` when trained without embeddings).
        golds: each question's gold article ids.
    """

    def __init__(self, space: TfidfSpace, term_rows: Any, vectors: np.ndarray | None,
                 golds: Sequence[Sequence[str]]) -> None:
        self.space = space
        self.term_rows = term_rows.tocsr()
        self.vectors = None if vectors is None else np.asarray(vectors, dtype=np.float32)
        self.golds = [list(g) for g in golds]
        self._by_term: Any = None

    @classmethod
    def fit(cls, tokens: Sequence[Sequence[str]], vectors: np.ndarray | None,
            golds: Sequence[Sequence[str] | set[str]]) -> QuestionMemory:
        space = TfidfSpace.fit(tokens)
        return cls(space, space.transform(tokens), vectors, [sorted(g) for g in golds])

    def __len__(self) -> int:
        return len(self.golds)

    def similarities(self, tokens: Sequence[str], vector: np.ndarray | None) -> np.ndarray:
        """Similarity of the question to every training question (mixed cosines)."""
        sims = self._term_similarities(tokens)
        if self.vectors is not None and vector is not None:
            sims = (1 - EMBEDDING_SHARE) * sims + EMBEDDING_SHARE * (self.vectors @ vector.astype(np.float32))
        return sims

    def _term_similarities(self, tokens: Sequence[str]) -> np.ndarray:
        """Cosines of the question's tf-idf row with every training question's, read column by
        column from the term-major copy of the rows (built on first use)."""
        if self._by_term is None:
            self._by_term = self.term_rows.T.tocsr()
        by_term = self._by_term
        sims = np.zeros(self.term_rows.shape[0], dtype=np.float32)
        cols, vals = self.space.row(tokens)
        for col, val in zip(cols.tolist(), vals, strict=True):
            lo, hi = by_term.indptr[col], by_term.indptr[col + 1]
            sims[by_term.indices[lo:hi]] += by_term.data[lo:hi] * val
        return sims

    def votes(self, tokens: Sequence[str], vector: np.ndarray | None, *, neighbours: int = NEIGHBOURS,
              temperature: float = TEMPERATURE) -> dict[str, MemoryVote]:
        """Articles voted for by the ``neighbours`` most similar training questions, best first."""
        return self.votes_from(self.similarities(tokens, vector), neighbours=neighbours, temperature=temperature)

    def votes_from(self, sims: np.ndarray, *, neighbours: int = NEIGHBOURS,
                   temperature: float = TEMPERATURE) -> dict[str, MemoryVote]:
        """:meth:`votes` for similarities already computed by :meth:`similarities`."""
        if not self.golds or len(sims) == 0:
            return {}
        k = min(neighbours, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        weights = np.exp((sims[top] - sims[top[0]]) / temperature)
        votes: dict[str, float] = {}
        best: dict[str, float] = {}
        for j, w in zip(top, weights, strict=True):
            for doc_id in self.golds[j]:
                votes[doc_id] = votes.get(doc_id, 0.0) + float(w)
                best[doc_id] = max(best.get(doc_id, -1.0), float(sims[j]))
        total = sum(votes.values()) or 1.0
        ranked = sorted(votes, key=lambda d: (-votes[d], d))
        return {d: MemoryVote(votes[d] / total, best[d], r) for r, d in enumerate(ranked, start=1)}

    def to_arrays(self) -> dict[str, np.ndarray]:
        rows = self.term_rows.tocoo()
        flat = [d for g in self.golds for d in g]
        offsets = np.cumsum([0] + [len(g) for g in self.golds])
        arrays = {**self.space.to_arrays("space_"), "row": rows.row.astype(np.int32), "col": rows.col.astype(np.int32),
                  "val": rows.data.astype(np.float32), "shape": np.asarray(self.term_rows.shape, dtype=np.int64),
                  "gold_ids": np.asarray(flat, dtype=np.str_), "gold_offsets": offsets.astype(np.int64)}
        if self.vectors is not None:
            arrays["vectors"] = self.vectors.astype(np.float16)
        return arrays

    @classmethod
    def from_arrays(cls, arrays: Any) -> QuestionMemory:
        from scipy import sparse

        shape = tuple(int(x) for x in arrays["shape"])
        rows = sparse.csr_matrix((arrays["val"], (arrays["row"], arrays["col"])), shape=shape, dtype=np.float32)
        ids = [str(x) for x in arrays["gold_ids"]]
        offsets = arrays["gold_offsets"]
        golds = [ids[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
        vectors = arrays["vectors"].astype(np.float32) if "vectors" in arrays else None
        return cls(TfidfSpace.from_arrays(arrays, "space_"), rows, vectors, golds)
