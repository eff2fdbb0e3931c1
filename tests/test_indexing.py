"""Indexing: incremental updates embed only what changed; a rebuild swaps atomically; articles with
headings flag the index for section-shared fusion."""

from __future__ import annotations

import pytest

from service.backends.embedded import EmbeddedBackend
from service.corpus.model import LegalDoc
from service.embeddings.cache import CachedEmbedder
from service.embeddings.use import UseEmbedder
from service.indexing import (
    CITATION_RULES_KEY,
    citation_links_current,
    citation_rules,
    index_documents,
    rebuild_embedded,
    with_citations,
)

pytestmark = pytest.mark.unit


def test_updating_one_document_embeds_only_that_document(tmp_path, mini_docs) -> None:
    embedder = CachedEmbedder(UseEmbedder(threads=1), tmp_path / "cache")
    backend = EmbeddedBackend(tmp_path / "idx")
    index_documents(backend, embedder, "mini", mini_docs, language="")
    assert embedder.computed == len(mini_docs)
    changed = [LegalDoc.from_dict({**d.to_dict(), "text": d.text + " (geändert)"}) if d.id == "SR220_Art41_de"
               else d for d in mini_docs]
    report = index_documents(backend, embedder, "mini", changed, language="")
    assert report.indexed == len(mini_docs)
    assert embedder.computed == len(mini_docs) + 1
    assert backend.count("mini") == len(mini_docs)
    assert backend.fetch("mini", ["SR220_Art41_de"])["SR220_Art41_de"].text.endswith("(geändert)")


def test_citations_are_extracted_into_cites(mini_embedded) -> None:
    backend, name = mini_embedded
    decision = backend.fetch(name, ["4A_32/2018"])["4A_32/2018"]
    assert "OR art. 257d" in decision.cites and "BGE 142 III 100" in decision.cites


def test_articles_with_headings_flag_the_index_for_sections(tmp_path, mini_docs, use_embedder) -> None:
    backend = EmbeddedBackend(tmp_path / "idx")
    plain = [d for d in mini_docs if "heading_path" not in d.meta]
    index_documents(backend, use_embedder, "mini", plain[:5], language="")
    assert "sections" not in backend.metadata("mini")
    swiss = next(d for d in mini_docs if d.id == "SR220_Art257e_de")
    index_documents(backend, use_embedder, "mini", [swiss], language="")  # an update (the API's ingest)
    assert backend.metadata("mini")["sections"] is True


def test_rebuild_swaps_in_place(tmp_path, mini_docs, use_embedder) -> None:
    rebuild_embedded(tmp_path, "mini", use_embedder, mini_docs[:5], language="", hnsw_min_docs=1000)
    reader = EmbeddedBackend(tmp_path)
    assert reader.count("mini") == 5
    rebuild_embedded(tmp_path, "mini", use_embedder, mini_docs, language="", hnsw_min_docs=1000)
    assert reader.count("mini") == len(mini_docs)
    assert reader.list_indices() == ["mini"]
    assert reader.manifest("mini")["name"] == "mini"


def test_an_index_records_the_citation_rules_its_links_were_read_by(tmp_path, mini_docs, use_embedder) -> None:
    backend = EmbeddedBackend(tmp_path / "idx")
    index_documents(backend, use_embedder, "mini", mini_docs[:5], language="")
    assert backend.metadata("mini")[CITATION_RULES_KEY] == citation_rules()
    assert citation_links_current(backend.metadata("mini"))
    # An update does not re-read the links of the documents already there: an index an older
    # lexsearch linked stays outdated until it is rebuilt.
    backend.update_metadata("mini", **{CITATION_RULES_KEY: "0123456789ab"})
    index_documents(backend, use_embedder, "mini", mini_docs[5:8], language="")
    assert not citation_links_current(backend.metadata("mini"))
    rebuild_embedded(tmp_path / "idx", "mini", use_embedder, mini_docs[:8], language="", hnsw_min_docs=10_000)
    assert citation_links_current(EmbeddedBackend(tmp_path / "idx").metadata("mini"))
    assert not citation_links_current({})  # an index built before lexsearch kept the entry


def test_an_article_of_swiss_law_reads_a_code_named_without_its_country_as_swiss() -> None:
    text = "Les art. 328 à 330 du code civil sont applicables."
    article = LegalDoc(id="AHVV-art43-fr", citation="art. 43 RAVS", text=text, law="RAVS", lang="fr",
                       meta={"law_de": "AHVV"})
    assert with_citations(article).cites == ("ZGB art. 328", "ZGB art. 329", "ZGB art. 330")
    # elsewhere "code civil" may be another country's code: no link rather than a wrong one
    assert with_citations(LegalDoc(id="x", citation="art. 1", text=text, law="Loi", lang="fr")).cites == ()
