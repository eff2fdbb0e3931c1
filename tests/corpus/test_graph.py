"""CorpusGraph on the mini fixture corpus: laws, article order, neighbours and citation links."""

from __future__ import annotations

import pytest

from service.corpus.graph import BLOCK_SIZE, CorpusGraph
from service.corpus.model import LegalDoc
from service.indexing import with_citations

pytestmark = pytest.mark.unit


def doc(doc_id: str, citation: str, law: str, text: str = "Text.", lang: str = "de") -> LegalDoc:
    return with_citations(LegalDoc(id=doc_id, citation=citation, text=text, law=law, lang=lang))


@pytest.fixture
def graph() -> CorpusGraph:
    return CorpusGraph.build([
        doc("or-3", "Art. 3 OR", "OR", "Siehe Art. 1 OR."),
        doc("or-1", "Art. 1 OR", "OR"),
        doc("or-2", "Art. 2 OR", "OR", "Wie in Art. 1 OR und Art. 3 OR."),
        doc("or-2a", "Art. 2a OR", "OR"),
        doc("zgb-1", "Art. 1 ZGB", "ZGB", "Nach Art. 2 OR."),
    ])


def test_articles_are_ordered_by_number_within_their_law(graph: CorpusGraph) -> None:
    assert list(graph.articles_of("OR")) == ["or-1", "or-2", "or-2a", "or-3"]
    info = graph.info("or-2a")
    assert info is not None and (info.law, info.position, info.law_size, info.number) == ("OR", 2, 4, 2)
    assert info.block == "OR#0" and BLOCK_SIZE > 4
    assert graph.law_of("zgb-1") == "ZGB" and graph.law_of("missing") == "" and graph.info("missing") is None
    assert sorted(graph.laws()) == ["OR", "ZGB"] and len(graph) == 5 and "or-1" in graph


def test_the_acts_of_a_corpus_count_each_code_once_in_every_language() -> None:
    trilingual = CorpusGraph.build([doc("or-1", "Art. 1 OR", "OR"), doc("co-1", "art. 1 CO", "CO", lang="fr"),
                                    doc("cc-1", "art. 1 CC", "CC", lang="fr"), doc("x", "Art. 1", "")])
    assert trilingual.acts() == {"OR", "ZGB"} and len(trilingual.laws()) == 4


def test_sections_list_their_articles_and_citations_are_kept(graph: CorpusGraph) -> None:
    assert list(graph.section_articles("OR#0")) == ["or-1", "or-2", "or-2a", "or-3"]
    assert list(graph.section_articles("OR#1")) == [] and list(graph.section_articles("OR")) == []
    assert graph.citation("or-2a") == "Art. 2a OR" and graph.citation("missing") == ""
    assert graph.without_citations().citation("zgb-1") == "Art. 1 ZGB"


def test_neighbours_stay_inside_the_law_nearest_first(graph: CorpusGraph) -> None:
    assert graph.neighbours("or-2") == ["or-1", "or-2a"]
    assert graph.neighbours("or-1") == ["or-2"]
    assert graph.neighbours("or-1", span=2) == ["or-2", "or-2a"]
    assert graph.neighbours("zgb-1") == [] and graph.neighbours("missing") == []


def test_citations_resolve_to_documents_in_both_directions(graph: CorpusGraph) -> None:
    assert set(graph.cites("or-2")) == {"or-1", "or-3"}
    assert graph.cites("zgb-1") == ("or-2",)
    assert set(graph.cited_by("or-1")) == {"or-2", "or-3"}
    assert graph.cited_by("or-2") == ("zgb-1",)
    assert graph.cites("or-1") == ()


def test_headings_above_the_article_form_its_section() -> None:
    path = ["Zweite Abteilung", "Der Mietvertrag", "Sicherheiten"]
    graph = CorpusGraph.build([
        LegalDoc(id="a", citation="Art. 257e OR", text="t", law="OR", title="Sicherheiten",
                 meta={"heading_path": path}),
        LegalDoc(id="b", citation="Art. 1 OR", text="t", law="OR", meta={"heading_path": ["Erster Titel"]}),
        LegalDoc(id="c", citation="Art. 2 OR", text="t", law="OR"),
    ])
    assert graph.info("a").heading == "Zweite Abteilung / Der Mietvertrag"
    assert graph.info("b").heading == "Erster Titel" and graph.info("c").heading == ""


def test_citation_keys_resolve_to_their_documents(graph: CorpusGraph) -> None:
    assert graph.resolve("OR art. 2a") == ("or-2a",) and graph.resolve("ZGB art. 1") == ("zgb-1",)
    assert graph.resolve("OR art. 99") == () and graph.without_citations().resolve("OR art. 1") == ("or-1",)


def test_without_citations_keeps_order_and_neighbours(graph: CorpusGraph) -> None:
    bare = graph.without_citations()
    assert bare.cites("or-2") == () and bare.cited_by("or-1") == ()
    assert bare.neighbours("or-2") == graph.neighbours("or-2") and bare.law_of("zgb-1") == "ZGB"


def test_mini_corpus_builds(mini_docs: list[LegalDoc]) -> None:
    graph = CorpusGraph.build(with_citations(d) for d in mini_docs)
    assert len(graph) == len(mini_docs)
    assert any(graph.cites(d.id) for d in mini_docs)
