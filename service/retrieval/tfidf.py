"""A small tf-idf space over analysed terms, for the learned components (law classifier, question memory).

Fitted on training questions, stored as plain arrays (no pickles), applied to one question at a
time in microseconds.

Example::

    space = TfidfSpace.fit([["miet", "kaution"], ["erb", "testament"]])
    space.transform([["kaution"]])        # 1 x 3 sparse row, L2-normalised
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
from scipy import sparse


class TfidfSpace:
    """Sublinear tf (``1 + log tf``) times smooth idf, rows L2-normalised.

    Args:
        terms: the vocabulary, in column order.
        idf: one idf per term.
    """

    def __init__(self, terms: Sequence[str], idf: np.ndarray) -> None:
        self.terms = list(terms)
        self.column = {t: i for i, t in enumerate(self.terms)}
        self.idf = np.asarray(idf, dtype=np.float32)

    @classmethod
    def fit(cls, documents: Sequence[Sequence[str]], *, min_df: int = 1) -> TfidfSpace:
        """Learn the vocabulary and idf (``log((1 + n) / (1 + df)) + 1``) from token lists."""
        df: Counter[str] = Counter()
        for tokens in documents:
            df.update(set(tokens))
        terms = sorted(t for t, n in df.items() if n >= min_df)
        n = len(documents)
        idf = np.array([math.log((1 + n) / (1 + df[t])) + 1.0 for t in terms], dtype=np.float32)
        return cls(terms, idf)

    @property
    def dim(self) -> int:
        return len(self.terms)

    def transform(self, documents: Sequence[Sequence[str]]) -> sparse.csr_matrix:
        """One L2-normalised row per token list; unknown terms are ignored."""
        rows, cols, vals = [], [], []
        for i, tokens in enumerate(documents):
            row_cols, row_vals = self._weights(tokens)
            rows.extend([i] * len(row_cols))
            cols.extend(row_cols)
            vals.extend(row_vals)
        return sparse.csr_matrix((np.asarray(vals, dtype=np.float32), (rows, cols)),
                                 shape=(len(documents), self.dim), dtype=np.float32)

    def row(self, tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """One token list's L2-normalised row as ``(columns, values)`` (the non-zero entries of
        :meth:`transform`'s row, in the same order), without building a sparse matrix: scoring one
        question against a few thousand columns then costs microseconds instead of scipy's set-up."""
        cols, vals = self._weights(tokens)
        return np.asarray(cols, dtype=np.int64), np.asarray(vals, dtype=np.float32)

    def _weights(self, tokens: Sequence[str]) -> tuple[list[int], list[float]]:
        counts = Counter(t for t in tokens if t in self.column)
        if not counts:
            return [], []
        weights = {self.column[t]: (1.0 + math.log(c)) * float(self.idf[self.column[t]]) for t, c in counts.items()}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        return list(weights), [w / norm for w in weights.values()]

    def to_arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """Arrays for ``np.savez`` (names start with ``prefix``)."""
        return {f"{prefix}terms": np.asarray(self.terms, dtype=np.str_), f"{prefix}idf": self.idf}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray] | np.lib.npyio.NpzFile, prefix: str) -> TfidfSpace:
        return cls([str(t) for t in arrays[f"{prefix}terms"]], arrays[f"{prefix}idf"])
