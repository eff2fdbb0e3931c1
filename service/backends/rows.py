"""What every backend does with a batch of documents before storing them: the analysed rows.

A write gets documents and one vector per document. Each backend checks the vectors' shape,
keeps the last line of an id that occurs twice, resolves each document's language, analyses its
BM25 text with ``service.analysis`` (the tokens both engines index) and rejects a non-finite
vector. :func:`analysed_docs` does this once for the embedded engine and the engine backends;
they only turn an :class:`AnalysedDoc` into their own row format.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from service.analysis.chain import analyzer_for
from service.analysis.language import detect_language
from service.corpus.model import LegalDoc
from service.corpus.views import bm25_text
from service.errors import InvalidInput


@dataclass(frozen=True)
class AnalysedDoc:
    """One document ready to be stored: its resolved language, its BM25 tokens and its vector."""

    doc: LegalDoc
    lang: str
    tokens: list[str]
    vector: np.ndarray


def checked_vectors(docs: Sequence[LegalDoc], vectors: np.ndarray, dim: int) -> np.ndarray:
    """``vectors`` as a contiguous float32 matrix of one row per document.

    Raises:
        InvalidInput: when the shape is not ``(len(docs), dim)``.
    """
    out = np.ascontiguousarray(vectors, dtype=np.float32)
    if out.shape != (len(docs), dim):
        raise InvalidInput(f"expected vectors of shape ({len(docs)}, {dim}), got {out.shape}")
    return out


def analyse(doc: LegalDoc, vector: np.ndarray, *, default_language: str) -> AnalysedDoc:
    """Resolve the language (the document's, else ``default_language``, else detected) and analyse the text.

    Raises:
        ValueError: for a vector with non-finite values.
    """
    if not np.all(np.isfinite(vector)):
        raise ValueError("vector has non-finite values")
    lang = doc.lang or default_language or detect_language(doc.text)
    return AnalysedDoc(doc=doc, lang=lang, tokens=analyzer_for(lang).tokens(bm25_text(doc)), vector=vector)


def analysed_docs(docs: Sequence[LegalDoc], vectors: np.ndarray, *, default_language: str,
                  failed: dict[str, str]) -> Iterator[AnalysedDoc]:
    """The documents of one write, analysed, in order.

    When an id occurs more than once, only its last line is kept (it replaces the others). A
    document that cannot be analysed is recorded in ``failed`` (id -> reason) and skipped, so one
    bad document does not sink the batch.
    """
    latest = {doc.id: position for position, doc in enumerate(docs)}
    for position, doc in enumerate(docs):
        if latest[doc.id] != position:
            continue
        try:
            item = analyse(doc, vectors[position], default_language=default_language)
        except Exception as exc:  # reported per document
            failed[doc.id] = f"{type(exc).__name__}: {exc}"
            continue
        yield item
