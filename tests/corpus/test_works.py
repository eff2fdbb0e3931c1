"""Works and versions: the rule, the grouping, the collapse of hits."""

from __future__ import annotations

import pytest

from service.corpus.model import Hit, LegalDoc
from service.corpus.works import WorkRule, collapse, group_versions, rule_for, work_map

pytestmark = pytest.mark.unit


def _doc(doc_id: str, lang: str, law_de: str = "OR", article: str = "1", **meta: str) -> LegalDoc:
    return LegalDoc(id=doc_id, citation=doc_id, text="text", lang=lang,
                    meta={"law_de": law_de, "article": article, **meta})


def test_rule_names_fields_and_reads_them_from_the_document() -> None:
    rule = WorkRule.parse("meta.law_de, meta.article")
    assert rule.fields == ("meta.law_de", "meta.article")
    doc = _doc("OR-art1-fr", "fr", article="1")
    assert rule.key(doc) == "OR\x1f1"
    assert WorkRule(("lang",)).key(doc) == "fr"
    assert rule.key(_doc("x", "fr", article="")) is None
    with pytest.raises(ValueError):
        WorkRule.parse(" , ")


def test_a_work_key_with_a_field_that_is_not_a_string_is_refused_as_a_value_error() -> None:
    # dataset.json reaches parse() as parsed JSON; the loader turns ValueError into a DataError line.
    with pytest.raises(ValueError, match="strings"):
        WorkRule.parse(["meta.law_de", 3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="strings"):
        rule_for({"work_key": [None]}, ("de", "fr"), None)


def test_problems_name_the_missing_article_or_law() -> None:
    rule = WorkRule.parse("meta.law_de,meta.article")
    assert rule.problem(_doc("a", "de")) is None
    assert rule.problem(_doc("a", "de", article="")).startswith("missing article number")
    assert rule.problem(_doc("a", "de", law_de="")).startswith("unknown law")
    assert WorkRule(("work",)).problem(_doc("a", "de")).startswith("missing work")
    assert WorkRule(("work",), required=False).problem(_doc("a", "de")) is None


def test_rule_comes_from_dataset_json_a_work_field_or_the_law_and_article_convention() -> None:
    swiss = _doc("OR-art1-de", "de")
    assert rule_for({"work_key": ["meta.sr", "meta.article"]}, ("de",), swiss) == WorkRule(("meta.sr", "meta.article"))
    assert rule_for({}, ("de", "fr"), swiss) == WorkRule(("meta.law_de", "meta.article"))
    assert rule_for({}, ("de",), swiss) is None  # one language: nothing to group
    assert rule_for({}, ("fr", "de"), swiss) is None  # no meta.law_fr
    explicit = LegalDoc(id="a", citation="a", text="t", meta={"work": "W1"})
    assert rule_for({}, (), explicit) == WorkRule(("work",), required=False)
    assert rule_for({}, ("de", "fr"), None) is None
    with pytest.raises(ValueError):
        rule_for({"work_key": 3}, (), swiss)


def test_versions_are_grouped_with_the_first_language_first() -> None:
    docs = [_doc("a-it", "it"), _doc("a-fr", "fr"), _doc("a-de", "de"), _doc("b-fr", "fr", article="2"),
            _doc("c-de", "de", article="")]
    grouped = group_versions(docs, WorkRule.parse("meta.law_de,meta.article"), ("de", "fr", "it"))
    assert [d.id for d in grouped] == ["a-it", "a-fr", "a-de", "b-fr", "c-de"]
    assert grouped[0].versions == ("a-de", "a-fr", "a-it") and grouped[0].work == "a-de"
    assert grouped[3].versions == () and grouped[3].work == "b-fr"  # a single version is a work of its own
    assert grouped[4].work == "c-de"
    assert work_map(grouped) == {"a-it": "a-de", "a-fr": "a-de", "a-de": "a-de"}
    # languages outside the list come after it, in corpus order
    assert group_versions([_doc("x-en", "en"), _doc("x-fr", "fr")], WorkRule(("meta.article",)),
                          ("fr",))[0].versions == ("x-fr", "x-en")


def test_a_document_must_be_one_of_its_versions() -> None:
    with pytest.raises(ValueError):
        LegalDoc(id="a", citation="a", text="t", versions=("b", "c"))
    doc = LegalDoc.from_dict({"id": "a-fr", "text": "t", "versions": ["a-de", "a-fr"]})
    assert doc.work == "a-de" and doc.to_dict()["versions"] == ["a-de", "a-fr"]
    assert "versions" not in LegalDoc(id="a", citation="a", text="t").to_dict()


def test_collapse_keeps_the_best_version_of_each_work_under_the_works_id() -> None:
    hits = [Hit(doc_id=d, score=s, scores={"bm25": s}, ranks={"bm25": r})
            for r, (d, s) in enumerate([("a-fr", 9.0), ("b-de", 8.0), ("a-de", 7.0), ("c", 6.0), ("b-it", 5.0)],
                                       start=1)]
    works = {"a-fr": "a-de", "a-de": "a-de", "b-de": "b-de", "b-it": "b-de"}
    out = collapse(hits, works.get, k=10, label="bm25")
    assert [(h.doc_id, h.score, h.ranks["bm25"]) for h in out] == [("a-de", 9.0, 1), ("b-de", 8.0, 2), ("c", 6.0, 3)]
    assert hits[0].doc_id == "a-fr"  # the input is not changed
    assert [h.doc_id for h in collapse(hits, works.get, k=2, label="bm25")] == ["a-de", "b-de"]
