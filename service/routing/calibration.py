"""Label-free QSI calibration: where does "a high top BM25 score" start on this index?

BM25 scores have no fixed scale: they grow with query length and depend on the corpus's term
statistics, so the paper's ``a = 0.5, b = 12.5`` fit only its own corpus. This module fits ``a``
and ``b`` per index without any relevance label, from pseudo-queries generated out of the corpus:

1. sample documents uniformly (reservoir sampling over ``backend.scan``, fixed seed);
2. for each, draw a query length ``m`` uniformly from ``[min_terms, max_terms]`` and ``m`` words:
   each word comes, with probability ``1 - noise``, from the sampled document (a random token,
   so frequent words are drawn more often) and otherwise from another random document (the
   collection model of known-item query generation, Azzopardi et al. 2007). The mix mimics a lay
   question: some words of the right article, some everyday words that match elsewhere;
3. run each pseudo-query through the index's own BM25 and keep the top-1 score;
4. ``b`` = the median top-1 score, ``a = 2 ln 9 / (p90 - p10)``: QSI is 0.5 at a typical query
   and moves from about 0.1 to about 0.9 across the central 80% of top-1 scores.

The result is stored with the index (``backend.update_metadata(name, qsi={...})``) by
``lexsearch index`` and by ``lexsearch eval``/``calibrate`` when an index lacks it.

Example::

    calibration = calibrate_qsi(backend, "stard", samples=300)
    backend.update_metadata("stard", qsi=calibration.to_dict())
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from service.analysis.chain import analyzer_for
from service.backends.base import SearchBackend
from service.corpus.model import LegalDoc
from service.corpus.views import bm25_text
from service.errors import InvalidInput

METHOD = "pseudo-queries-v1"


@dataclass(frozen=True)
class QsiCalibration:
    """QSI's ``a`` and ``b`` for one index, with the evidence they came from."""

    a: float
    b: float
    samples: int
    p10: float
    p50: float
    p90: float
    method: str = METHOD
    created: str = ""
    params: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"a": round(self.a, 6), "b": round(self.b, 6), "samples": self.samples,
                "p10": round(self.p10, 4), "p50": round(self.p50, 4), "p90": round(self.p90, 4),
                "method": self.method, "created": self.created, "params": dict(self.params or {})}


def qsi_parameters(top_scores: Sequence[float]) -> tuple[float, float, dict[str, float]]:
    """``(a, b, percentiles)`` from a sample of top-1 BM25 scores (see the module docstring).

    Raises:
        ValueError: with fewer than 10 scores, or when the scores do not spread (p90 == p10).

    Example::

        a, b, _ = qsi_parameters([float(x) for x in range(1, 101)])   # b = 50.5, a = 2 ln 9 / 79.2
    """
    arr = np.asarray([s for s in top_scores if math.isfinite(s)], dtype=np.float64)
    if arr.size < 10:
        raise ValueError(f"QSI calibration needs at least 10 scores, got {arr.size}")
    p10, p50, p90 = (float(x) for x in np.percentile(arr, [10, 50, 90]))
    spread = p90 - p10
    if spread <= 1e-9:
        raise ValueError("the top-1 BM25 scores do not spread; QSI cannot be calibrated on this index")
    return 2.0 * math.log(9.0) / spread, p50, {"p10": p10, "p50": p50, "p90": p90}


def sample_documents(docs: Iterable[LegalDoc], count: int, rng: random.Random) -> list[LegalDoc]:
    """A uniform sample of ``count`` documents in one pass (reservoir sampling)."""
    sample: list[LegalDoc] = []
    for seen, doc in enumerate(docs):
        if len(sample) < count:
            sample.append(doc)
        else:
            j = rng.randrange(seen + 1)
            if j < count:
                sample[j] = doc
    return sample


def pseudo_queries(docs: Sequence[LegalDoc], *, default_lang: str, count: int, rng: random.Random,
                   min_terms: int = 4, max_terms: int = 24, noise: float = 0.5) -> list[tuple[str, str]]:
    """``count`` pseudo-queries ``(text, lang)``, each mixing one document's words with noise words.

    Raises:
        ValueError: for bad bounds or ``noise`` outside [0, 1).
    """
    if not 1 <= min_terms <= max_terms or not 0.0 <= noise < 1.0:
        raise ValueError("pseudo-queries need 1 <= min_terms <= max_terms and 0 <= noise < 1")
    words: list[tuple[list[str], str]] = []
    for doc in docs:
        lang = doc.lang or default_lang
        analyzer = analyzer_for(lang)
        toks = [t for t in analyzer.raw_tokens(bm25_text(doc)) if t not in analyzer.spec.stopwords]
        if toks:
            words.append((toks, lang))
    if len(words) < 2:
        return []
    out = []
    for _ in range(count):
        own, lang = words[rng.randrange(len(words))]
        length = rng.randint(min_terms, max_terms)
        terms = []
        for _ in range(length):
            source = own if rng.random() >= noise else words[rng.randrange(len(words))][0]
            terms.append(source[rng.randrange(len(source))])
        out.append((" ".join(terms), lang))
    return out


def calibrate_qsi(backend: SearchBackend, index: str, *, language: str = "", samples: int = 300, seed: int = 13,
                  min_terms: int = 4, max_terms: int = 24, noise: float = 0.5) -> QsiCalibration:
    """Fit QSI's ``a`` and ``b`` for ``index`` from pseudo-queries (no labels; see the module docstring).

    Args:
        backend: the backend holding the index.
        index: the index name.
        language: the corpus language for documents that name none ('' = from the index stats).
        samples: how many pseudo-queries to score (each is one BM25 search).
        seed: the random seed, so a calibration can be repeated exactly.

    Raises:
        InvalidInput: when the index holds too few searchable documents to calibrate.
    """
    rng = random.Random(seed)
    if not language:
        languages = backend.stats(index).languages
        language = languages[0] if languages else "en"
    docs = sample_documents(backend.scan(index), min(2 * samples, 5000), rng)
    queries = pseudo_queries(docs, default_lang=language, count=samples, rng=rng, min_terms=min_terms,
                             max_terms=max_terms, noise=noise)
    tops = []
    for text, lang in queries:
        hits = backend.bm25(index, text, k=1, lang=lang)
        if hits:
            tops.append(hits[0].scores.get("bm25", hits[0].score))
    try:
        a, b, pct = qsi_parameters(tops)
    except ValueError as exc:
        raise InvalidInput(f"cannot calibrate QSI on index {index!r}: {exc}") from None
    return QsiCalibration(a=a, b=b, samples=len(tops), p10=pct["p10"], p50=pct["p50"], p90=pct["p90"],
                          created=time.strftime("%Y-%m-%dT%H:%M:%S"),
                          params={"seed": seed, "min_terms": min_terms, "max_terms": max_terms, "noise": noise})


def ensure_qsi_calibration(backend: SearchBackend, index: str, *, language: str = "", force: bool = False,
                           samples: int = 300) -> dict[str, Any]:
    """Calibrate QSI and store it with the index unless it is already there; returns the stored entry."""
    from service.routing.router import QSI_KEY

    meta = backend.metadata(index)
    current = meta.get(QSI_KEY)
    if current and current.get("method") == METHOD and not force:
        return dict(current)
    calibration = calibrate_qsi(backend, index, language=language, samples=samples).to_dict()
    backend.update_metadata(index, **{QSI_KEY: calibration})
    return calibration


def ensure_qsi_quietly(backend: SearchBackend, index: str, *, language: str = "", force: bool = False) -> str:
    """:func:`ensure_qsi_calibration` for the indexing commands: returns a status line, never raises
    for a corpus too small or too uniform to calibrate (routing then uses the paper's defaults)."""
    try:
        stored = ensure_qsi_calibration(backend, index, language=language, force=force)
    except (InvalidInput, ValueError) as exc:
        return f"QSI not calibrated ({exc}); routing uses the default a/b"
    return f"QSI calibrated: a={stored['a']:.4f}, b={stored['b']:.2f} (median top-1 BM25 of pseudo-queries)"
