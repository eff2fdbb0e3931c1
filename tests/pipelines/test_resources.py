"""Per-index resources: the graph is built once per index and document count."""

from __future__ import annotations

import pytest

from service.agents.vocabulary import ProbeVocabulary, Vocabulary
from service.backends.embedded import EmbeddedBackend
from service.corpus.model import Filters
from service.indexing import index_documents
from service.models import TrainedModels
from service.pipelines import resources
from service.pipelines.base import SearchRequest
from service.pipelines.resources import IndexResources, widen_law_filter

pytestmark = pytest.mark.unit


def test_graph_is_cached_and_rebuilt_when_the_index_changes(tmp_path, mini_docs, use_embedder) -> None:
    backend = EmbeddedBackend(tmp_path)
    assert index_documents(backend, use_embedder, "r", mini_docs[:10], language="").ok
    first = IndexResources.get(backend, "r", None)
    assert IndexResources.get(backend, "r", None) is first and len(first.graph) == 10
    assert isinstance(first.vocabulary, ProbeVocabulary) and first.vocabulary.known("用人单位")
    assert not first.vocabulary.known("zzzqqq")
    with_vocab = IndexResources.get(backend, "r", TrainedModels(vocabulary=Vocabulary({"x": 1}, 1)))
    assert with_vocab.graph is first.graph and isinstance(with_vocab.vocabulary, Vocabulary)
    assert index_documents(backend, use_embedder, "r", mini_docs[10:12], language="").ok
    assert len(IndexResources.get(backend, "r", None).graph) == 12


def test_a_law_filter_on_an_index_without_versions_reads_nothing(tmp_path, mini_docs, use_embedder) -> None:
    backend = EmbeddedBackend(tmp_path)
    assert index_documents(backend, use_embedder, "single", mini_docs, language="").ok
    request = SearchRequest(query="Kaution", index="single", filters=Filters.of(law="ZGB"))
    assert widen_law_filter(backend, request) is request
    lower = SearchRequest(query="Kaution", index="single", filters=Filters.of(law=["zgb", "nope"]))
    assert widen_law_filter(backend, lower).filters == Filters.of(law=["ZGB", "nope"])
    assert (id(backend), "single") not in resources._CACHE  # no scan for names that cannot differ


def test_a_law_filter_on_a_trilingual_index_names_the_act_in_every_language(trilingual_embedded) -> None:
    backend, name = trilingual_embedded
    request = SearchRequest(query="sûretés", index=name, filters=Filters.of(law="OR", lang="fr"))
    assert widen_law_filter(backend, request).filters == Filters.of(law=["CO", "OR"], lang="fr")


def test_an_index_linked_by_other_citation_rules_is_reported_once(tmp_path, mini_docs, use_embedder, caplog) -> None:
    backend = EmbeddedBackend(tmp_path)
    assert index_documents(backend, use_embedder, "now", mini_docs[:5], language="").ok
    assert index_documents(backend, use_embedder, "old", mini_docs[:5], language="").ok
    backend.update_metadata("old", citation_rules="0123456789ab")  # as an older lexsearch left it
    with caplog.at_level("WARNING", logger="service.pipelines.resources"):
        IndexResources.get(backend, "now", None)
        assert not caplog.records
        IndexResources.get(backend, "old", None)
        assert index_documents(backend, use_embedder, "old", mini_docs[5:7], language="").ok
        IndexResources.get(backend, "old", None)  # the graph is rebuilt, the warning not repeated
    assert [r.getMessage() for r in caplog.records] == [
        "index 'old' holds citation links read by another version of lexsearch; rebuild it (lexsearch index "
        "without --update) to link its documents by this one's rules"]
