"""Pinpoint citations: the best-matching paragraph(s) of an article."""

from __future__ import annotations

import numpy as np
import pytest

from service.corpus.model import LegalDoc
from service.retrieval.pinpoint import Paragraph, paragraphs_of, pinpoint

pytestmark = pytest.mark.unit

PARAGRAPHS = [
    {"abs": "1", "citation": "Art. 257e Abs. 1 OR", "text": "Der Vermieter hinterlegt die Sicherheit bei einer Bank."},
    {"abs": "2", "citation": "Art. 257e Abs. 2 OR", "text": "Höchstens drei Monatszinse als Sicherheit."},
    {"abs": "3", "citation": "Art. 257e Abs. 3 OR", "text": "Die Bank gibt die Sicherheit nach einem Jahr zurück."},
    {"abs": "", "citation": "Art. 257e OR", "text": "Fussnote ohne Absatznummer"},
]


def _doc(paragraphs: object) -> LegalDoc:
    return LegalDoc(id="OR-art257e-de", citation="Art. 257e OR", text="...", lang="de", law="OR",
                    meta={"paragraphs": paragraphs})


def test_paragraphs_without_a_number_or_text_are_left_out() -> None:
    assert [p.number for p in paragraphs_of(_doc(PARAGRAPHS))] == ["1", "2", "3"]
    assert paragraphs_of(_doc("not a list")) == [] and paragraphs_of(_doc([1, None])) == []


def test_the_paragraph_with_the_questions_terms_is_named() -> None:
    found = pinpoint(_doc(PARAGRAPHS), "Wie viele Monatszinse darf er höchstens verlangen?")
    assert found == [Paragraph("2", "Art. 257e Abs. 2 OR", PARAGRAPHS[1]["text"])]
    assert found[0].to_dict() == {"paragraph": "2", "citation": "Art. 257e Abs. 2 OR"}
    assert pinpoint(_doc(PARAGRAPHS), "Quokka") == []  # nothing matches: no pinpoint
    assert pinpoint(_doc(PARAGRAPHS[:1]), "Bank") == []  # one paragraph: the article is the pinpoint


def test_meaning_bridges_languages_and_close_paragraphs_are_named_together() -> None:
    vectors = {PARAGRAPHS[0]["text"]: [1.0, 0.0], PARAGRAPHS[1]["text"]: [0.6, 0.8],
               PARAGRAPHS[2]["text"]: [0.62, 0.78]}

    def embed(texts) -> np.ndarray:
        return np.asarray([vectors[t] for t in texts], dtype=np.float32)

    found = pinpoint(_doc(PARAGRAPHS), "My landlord keeps the deposit", query_vector=np.asarray([0.0, 1.0]),
                     embed=embed)
    assert [p.number for p in found] == ["2", "3"]
