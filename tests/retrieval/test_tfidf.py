"""The tf-idf space: sparse rows for many token lists, and one row as plain arrays."""

from __future__ import annotations

import math

import numpy as np
import pytest

from service.retrieval.tfidf import TfidfSpace

pytestmark = pytest.mark.unit

DOCS = [["miete", "kaution", "miete"], ["erbe", "testament"], ["miete", "mangel"]]


def test_row_is_the_transform_row() -> None:
    space = TfidfSpace.fit(DOCS)
    for tokens in (["miete", "miete", "kaution", "unbekannt"], ["testament"], [], ["unbekannt"]):
        cols, vals = space.row(tokens)
        dense = np.zeros(space.dim, dtype=np.float32)
        dense[cols] = vals
        np.testing.assert_array_equal(dense, space.transform([tokens]).toarray()[0])
        assert cols.dtype == np.int64 and vals.dtype == np.float32


def test_row_weights_by_hand() -> None:
    space = TfidfSpace.fit(DOCS)
    cols, vals = space.row(["miete", "miete", "testament"])
    idf = {t: math.log(4 / (1 + df)) + 1 for t, df in (("miete", 2), ("testament", 1))}
    raw = {"miete": (1 + math.log(2)) * idf["miete"], "testament": idf["testament"]}
    norm = math.sqrt(sum(w * w for w in raw.values()))
    got = {space.terms[c]: v for c, v in zip(cols.tolist(), vals.tolist(), strict=True)}
    assert got == {t: pytest.approx(w / norm, rel=1e-6) for t, w in raw.items()}
