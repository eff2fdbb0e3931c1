"""The Elasticsearch backend against a real Elasticsearch 8.19 node (scripts/elasticsearch-local).

The shared contract (:class:`BackendConformance`, which also checks agreement with the embedded
engine) plus the engine acceptance cases: indexing, BM25/kNN, filters, alias-swap rebuilds,
attaching a foreign index, and bulk error reporting and retries.
"""

from __future__ import annotations

import pytest

from service.backends.elasticsearch import ElasticsearchBackend
from service.indexing import rebuild_engine
from tests.backends.conformance import BackendConformance
from tests.backends.engine_acceptance import EngineAcceptance, EngineHandle
from tests.support.engines import unique_index

pytestmark = pytest.mark.engine


class TestElasticsearchConformance(BackendConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def backend_index(cls, elasticsearch_url, mini_docs, use_embedder):
        backend = ElasticsearchBackend(elasticsearch_url)
        name = unique_index("conformance")
        report = rebuild_engine(backend, name, use_embedder, mini_docs, language="")
        assert report.ok, report.failed
        yield backend, name
        backend.drop(name)


class TestElasticsearchAcceptance(EngineAcceptance):
    @pytest.fixture
    def engine(self, elasticsearch_url) -> EngineHandle:
        return EngineHandle(elasticsearch_url, ElasticsearchBackend)

    def test_vector_field_is_an_unquantised_dense_vector(self, engine, cleanup, mini_docs, use_embedder) -> None:
        backend, name = self._indexed(engine, cleanup, mini_docs[:3], use_embedder, "dense")
        mapping = backend._get_mapping(name)[f"{name}-v1"]["mappings"]["properties"]["vector"]
        assert mapping["type"] == "dense_vector" and mapping["similarity"] == "cosine"
        assert mapping["index_options"]["type"] == "hnsw"

    def test_nodes_without_synonym_graph_get_indices_without_synonyms(self, engine, cleanup, mini_docs,
                                                                      use_embedder) -> None:
        # the Maven-built test node lacks analysis-common, so index creation must not ask for synonym_graph
        backend, name = self._indexed(engine, cleanup, mini_docs[:3], use_embedder, "nosyn")
        assert backend.supports_synonyms() is False
        body_de = backend._get_mapping(name)[f"{name}-v1"]["mappings"]["properties"]["body_de"]
        assert body_de["analyzer"] == "lexsearch_german" and "search_analyzer" not in body_de
