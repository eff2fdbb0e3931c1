"""The document model and filters."""

from __future__ import annotations

import pytest

from service.corpus.model import DocKind, Filters, Hit, LegalDoc, UnknownFilterField

pytestmark = pytest.mark.unit


def test_from_dict_keeps_known_fields_and_moves_the_rest_to_meta() -> None:
    doc = LegalDoc.from_dict({"id": "BGE_1", "citation": "BGE 131 III 601", "text": "…", "kind": "leading_decision",
                              "date": "2005-06-01", "court": "BGer", "cites": ["OR art. 41"], "extra": 5})
    assert doc.kind is DocKind.LEADING_DECISION
    assert doc.cites == ("OR art. 41",)
    assert doc.meta == {"extra": 5}
    assert LegalDoc.from_dict(doc.to_dict()) == doc


@pytest.mark.parametrize("data, message", [
    ({"text": "x"}, "missing field 'id'"),
    ({"id": "a b", "text": "x"}, "whitespace"),
    ({"id": "a"}, "missing field 'text'"),
    ({"id": "a", "text": "x", "kind": "opinion"}, "opinion"),
    ({"id": "a", "text": "x", "date": "2020-13-01"}, "ISO date"),
    ({"id": "a", "text": ["x"]}, "must be a string"),
    ({"id": "a", "text": "x", "cites": "Art. 1 ZGB"}, "list of strings"),
])
def test_from_dict_rejects_bad_documents(data, message) -> None:
    with pytest.raises(ValueError, match=message):
        LegalDoc.from_dict(data)


def test_citation_defaults_to_id_and_numbers_become_strings() -> None:
    doc = LegalDoc.from_dict({"id": "7", "text": "x", "law": 123})
    assert doc.citation == "7" and doc.law == "123"


def test_filters_parse_and_match() -> None:
    filters = Filters.parse(["law=OR,ZGB", "kind=statute", "date_from=2000-01-01"])
    assert filters.values("law") == ("OR", "ZGB")
    dated = LegalDoc(id="a", citation="Art. 1 OR", text="x", law="OR", date="2001-01-01")
    undated = LegalDoc(id="b", citation="Art. 1 OR", text="x", law="OR")
    assert filters.matches(dated)
    assert not filters.matches(undated)
    assert not Filters.of(law="ZGB").matches(dated)
    assert not Filters()
    assert Filters.of(law="OR").to_dict() == {"law": ["OR"]}


def test_unknown_filter_field_is_named() -> None:
    with pytest.raises(UnknownFilterField, match="unknown filter field 'colour'"):
        Filters.parse(["colour=red"])
    with pytest.raises(ValueError, match="field=value"):
        Filters.parse(["law"])
    with pytest.raises(ValueError):
        Filters.parse(["date_from=yesterday"])


def test_narrowed_intersects() -> None:
    base = Filters.of(law=["OR", "ZGB"])
    assert base.narrowed("law", ("ZGB", "StGB")).values("law") == ("ZGB",)
    assert Filters().narrowed("law", ("OR",)).values("law") == ("OR",)


def test_hit_to_dict_drops_non_finite_scores() -> None:
    hit = Hit(doc_id="a", score=float("nan"), scores={"bm25": float("inf"), "knn": 0.5})
    assert hit.to_dict() == {"doc_id": "a", "score": None, "scores": {"bm25": None, "knn": 0.5}, "ranks": {},
                             "provenance": []}
