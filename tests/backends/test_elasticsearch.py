"""The Elasticsearch backend against a real, secured Elasticsearch 8.19 node (scripts/elasticsearch-local).

The shared contract (:class:`BackendConformance`, which also checks agreement with the embedded
engine) plus the engine acceptance cases: indexing, BM25/kNN, filters, alias-swap rebuilds,
attaching a foreign index, and bulk error reporting and retries. The node runs with x-pack
security, so every backend here logs in (basic auth, or a real API key).
"""

from __future__ import annotations

import pytest

from service.backends.elasticsearch import ElasticsearchBackend
from service.errors import EngineUnavailable
from service.indexing import rebuild_engine
from tests.backends.conformance import BackendConformance, WorkConformance
from tests.backends.engine_acceptance import EngineAcceptance, EngineHandle
from tests.support.engines import unique_index

pytestmark = pytest.mark.engine


class TestElasticsearchConformance(BackendConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def backend_index(cls, elasticsearch_url, elasticsearch_credentials, mini_docs, use_embedder):
        backend = ElasticsearchBackend(elasticsearch_url, **elasticsearch_credentials.kwargs)
        name = unique_index("conformance")
        report = rebuild_engine(backend, name, use_embedder, mini_docs, language="")
        assert report.ok, report.failed
        yield backend, name
        backend.drop(name)


class TestElasticsearchWorks(WorkConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def works_index(cls, elasticsearch_url, elasticsearch_credentials, trilingual_docs, use_embedder):
        backend = ElasticsearchBackend(elasticsearch_url, **elasticsearch_credentials.kwargs)
        name = unique_index("works")
        report = rebuild_engine(backend, name, use_embedder, trilingual_docs, language="de")
        assert report.ok, report.failed
        yield backend, name
        backend.drop(name)


class TestElasticsearchAcceptance(EngineAcceptance):
    @pytest.fixture
    def engine(self, elasticsearch_url, elasticsearch_credentials) -> EngineHandle:
        return EngineHandle(elasticsearch_url, ElasticsearchBackend, elasticsearch_credentials.kwargs)

    def test_vector_field_is_an_unquantised_dense_vector(self, engine, cleanup, mini_docs, use_embedder) -> None:
        backend, name = self._indexed(engine, cleanup, mini_docs[:3], use_embedder, "dense")
        mapping = backend.api.get_mapping(name)[f"{name}-v1"]["mappings"]["properties"]["vector"]
        assert mapping["type"] == "dense_vector" and mapping["similarity"] == "cosine"
        assert mapping["index_options"]["type"] == "hnsw"

    def test_body_fields_apply_the_legal_synonyms_at_search_time(self, engine, cleanup, mini_docs,
                                                                  use_embedder) -> None:
        # synonym_graph comes from the node's lexsearch-es-compat plugin (the Maven build lacks analysis-common)
        backend, name = self._indexed(engine, cleanup, mini_docs, use_embedder, "synonyms")
        assert backend.supports_synonyms()
        body_de = backend.api.get_mapping(name)[f"{name}-v1"]["mappings"]["properties"]["body_de"]
        assert body_de["analyzer"] == "lexsearch_german" and body_de["search_analyzer"] == "lexsearch_german_search"
        # "Kaution" is not in Art. 257e OR, but analyzers/synonyms/de.txt maps it to "Sicherheit"
        body = {"query": {"match": {"body_de": "Kaution"}}, "size": 20, "_source": False}
        ids = [h["_id"] for h in backend.api.search(name, body)["hits"]["hits"]]
        assert "SR220_Art257e_de" in ids


class TestElasticsearchSecurity:
    """The node's own security layer (x-pack, file realm and API keys) decides; lexsearch reports it clearly."""

    @pytest.mark.parametrize("auth", [{"username": "lexsearch-nobody", "password": "wrong-password"},
                                      {"password": "wrong-password"}, {}, {"api_key": "bm9wZTpub3Bl"}],
                             ids=["unknown-user", "wrong-password", "no-credentials", "unknown-api-key"])
    def test_refused_credentials_are_a_clear_engine_error(self, elasticsearch_url, elasticsearch_credentials,
                                                          auth) -> None:
        if auth.keys() == {"password"}:
            auth = {"username": elasticsearch_credentials.username, **auth}
        backend = ElasticsearchBackend(elasticsearch_url, **auth)
        with pytest.raises(EngineUnavailable, match=r"refused the credentials \(HTTP 401\)") as caught:
            backend.exists("lexsearch-anything")
        assert caught.value.code == "engine_auth" and caught.value.exit_code == 3
        assert f"Elasticsearch at {elasticsearch_url}" in str(caught.value)

    def test_an_api_key_is_accepted(self, elasticsearch_url, elasticsearch_api_key) -> None:
        backend = ElasticsearchBackend(elasticsearch_url, api_key=elasticsearch_api_key)
        assert backend.exists("lexsearch-test-no-such-index") is False
