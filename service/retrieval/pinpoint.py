"""Pinpoint citations: the paragraph(s) of a statute article that answer the question (``Art. 257e Abs. 3 OR``).

A corpus line may list its paragraphs in ``meta.paragraphs`` as ``{"abs": "3", "citation": "Art. 257e
Abs. 3 OR", "text": "..."}`` (the Swiss federal statutes do). Each paragraph is scored by the cosine
of its embedding with the question's (which bridges languages: an English question, a German
article) plus a small bonus per question term it contains (analysed in the paragraph's language,
legal synonyms included). The best paragraph is named, and with it every paragraph within
:data:`MARGIN` of it, since a question often needs two paragraphs of one article. Retrieval and
evaluation stay at article level; the pinpoint is part of the answer shown.

Example::

    pinpoint(doc, "Mein Vermieter gibt die Kaution nicht zurück", query_vector=v, embed=embedder.embed_documents)
    # [Paragraph(number='3', citation='Art. 257e Abs. 3 OR', text='Die Bank darf ...')]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from service.analysis.chain import analyzer_for
from service.corpus.model import LegalDoc

TERM_BONUS = 0.03
"""Score added per distinct question term found in a paragraph (cosines of related texts lie near 0.3-0.6)."""
MARGIN = 0.05
"""Paragraphs scoring within this of the best one are named with it."""


@dataclass(frozen=True)
class Paragraph:
    """One numbered paragraph of an article: its number (``3``, ``1bis``), pinpoint citation and text."""

    number: str
    citation: str
    text: str

    def to_dict(self) -> dict[str, str]:
        return {"paragraph": self.number, "citation": self.citation}


def paragraphs_of(doc: LegalDoc) -> list[Paragraph]:
    """The numbered paragraphs listed in ``doc.meta["paragraphs"]`` (those without a number are skipped)."""
    raw: Any = doc.meta.get("paragraphs")
    if not isinstance(raw, list):
        return []
    out = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        number, citation, text = (str(item.get(key) or "").strip() for key in ("abs", "citation", "text"))
        if number and citation and text:
            out.append(Paragraph(number, citation, text))
    return out


def pinpoint(doc: LegalDoc, query: str, *, query_vector: np.ndarray | None = None,
             embed: Callable[[Sequence[str]], np.ndarray] | None = None) -> list[Paragraph]:
    """The paragraph(s) of ``doc`` that best match ``query``; ``[]`` for an article of one paragraph or none.

    Args:
        doc: the article version shown to the reader.
        query: the question.
        query_vector: the question's embedding; with ``embed`` (the embedder's ``embed_documents``),
            paragraphs are compared by meaning, else by their terms only.
        embed: embeds paragraph texts.
    """
    paragraphs = paragraphs_of(doc)
    if len(paragraphs) < 2:
        return []
    analyzer = analyzer_for(doc.lang or "de")
    terms = {t for t, w in analyzer.query_weights(query).items() if w > 0}
    scores = np.asarray([TERM_BONUS * len(terms & set(analyzer.tokens(p.text))) for p in paragraphs])
    if query_vector is not None and embed is not None:
        scores = scores + embed([p.text for p in paragraphs]) @ np.asarray(query_vector, dtype=np.float32)
    best = float(scores.max())
    if best <= 0:
        return []
    return [p for p, score in zip(paragraphs, scores, strict=True) if score >= best - MARGIN]
