"""The OpenSearch backend against a real OpenSearch 2.19 node (scripts/opensearch-local).

The shared contract (:class:`BackendConformance`, which also checks agreement with the embedded
engine) plus the engine acceptance cases: indexing, BM25/kNN, filters, alias-swap rebuilds,
attaching a foreign index, and bulk error reporting and retries.
"""

from __future__ import annotations

import pytest

from service.backends.opensearch import OpenSearchBackend
from service.indexing import rebuild_engine
from tests.backends.conformance import BackendConformance, WorkConformance
from tests.backends.engine_acceptance import EngineAcceptance, EngineHandle
from tests.support.engines import unique_index

pytestmark = pytest.mark.engine


class TestOpenSearchConformance(BackendConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def backend_index(cls, opensearch_url, mini_docs, use_embedder):
        backend = OpenSearchBackend(opensearch_url)
        name = unique_index("conformance")
        report = rebuild_engine(backend, name, use_embedder, mini_docs, language="")
        assert report.ok, report.failed
        yield backend, name
        backend.drop(name)


class TestOpenSearchWorks(WorkConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def works_index(cls, opensearch_url, trilingual_docs, use_embedder):
        backend = OpenSearchBackend(opensearch_url)
        name = unique_index("works")
        report = rebuild_engine(backend, name, use_embedder, trilingual_docs, language="de")
        assert report.ok, report.failed
        yield backend, name
        backend.drop(name)


class TestOpenSearchAcceptance(EngineAcceptance):
    @pytest.fixture
    def engine(self, opensearch_url) -> EngineHandle:
        return EngineHandle(opensearch_url, OpenSearchBackend)

    def test_vector_field_uses_the_lucene_engine(self, engine, cleanup, mini_docs, use_embedder) -> None:
        backend, name = self._indexed(engine, cleanup, mini_docs[:3], use_embedder, "lucene")
        mapping = backend.api.get_mapping(name)[f"{name}-v1"]["mappings"]["properties"]["vector"]
        assert mapping["type"] == "knn_vector" and mapping["method"]["engine"] == "lucene"

    def test_body_fields_apply_the_legal_synonyms_at_search_time(self, engine, cleanup, mini_docs,
                                                                  use_embedder) -> None:
        backend, name = self._indexed(engine, cleanup, mini_docs, use_embedder, "synonyms")
        assert backend.supports_synonyms()
        # "Kaution" is not in Art. 257e OR, but analyzers/synonyms/de.txt maps it to "Sicherheit"
        body = {"query": {"match": {"body_de": "Kaution"}}, "size": 20, "_source": False}
        ids = [h["_id"] for h in backend.api.search(name, body)["hits"]["hits"]]
        assert "SR220_Art257e_de" in ids
