"""Pure parts of the shared engine backend: names, bulk reasons, retry decisions, prefetching, settings."""

from __future__ import annotations

import threading
import time

import pytest

from service.backends.elasticsearch import ElasticsearchBackend
from service.backends.engine.bulk import bulk_reason, prefetched, retryable
from service.backends.engine.client import incomplete
from service.backends.engine.facts import IndexInfo, check_name
from service.backends.fieldmap import FieldMap
from service.backends.opensearch import OpenSearchBackend
from service.config import BackendSettings, EngineSettings, load_settings
from service.errors import ConfigError, IndexCorrupt, InvalidInput

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", ["lexsearch-statutes", "eval-stard-ada7c91df392", "a_b.c"])
def test_valid_index_names(name) -> None:
    check_name(name)


@pytest.mark.parametrize("name", ["", "Upper", "has space", "-dash", "_under", "a/b", "a*", "a,b", "..", ".tasks"])
def test_invalid_index_names(name) -> None:
    with pytest.raises(InvalidInput, match="invalid engine index name"):
        check_name(name)


def test_bulk_reason_names_the_engine_error_and_its_cause() -> None:
    result = {"status": 400, "error": {"type": "mapper_parsing_exception", "reason": "failed to parse field [date]",
                                       "caused_by": {"type": "illegal_argument_exception", "reason": "bad date"}}}
    assert bulk_reason(result) == ("HTTP 400: mapper_parsing_exception: failed to parse field [date] "
                                    "(illegal_argument_exception: bad date)")
    assert bulk_reason({"status": "N/A", "error": "ConnectionError(refused)"}) == "HTTP N/A: ConnectionError(refused)"


@pytest.mark.parametrize(("status", "retry"), [(429, True), (500, True), (503, True), ("N/A", True),
                                               ("TIMEOUT", True), (400, False), (404, False), (409, False)])
def test_which_bulk_failures_are_retried(status, retry) -> None:
    assert retryable(status) is retry


def test_prefetched_yields_everything_in_order() -> None:
    assert list(prefetched(iter(range(1000)), 7)) == list(range(1000))


def test_prefetched_reraises_the_producer_error() -> None:
    def broken():
        yield 1
        raise RuntimeError("boom")

    out = []
    with pytest.raises(RuntimeError, match="boom"):
        for item in prefetched(broken(), 4):
            out.append(item)
    assert out == [1]


def test_prefetched_stops_the_producer_when_the_consumer_stops() -> None:
    produced = []

    def endless():
        i = 0
        while True:
            produced.append(i)
            yield i
            i += 1

    gen = prefetched(endless(), 2)
    assert next(gen) == 0
    gen.close()
    time.sleep(0.5)
    count = len(produced)
    time.sleep(0.3)
    assert len(produced) == count  # the helper thread has stopped
    assert not [t for t in threading.enumerate() if t.name == "lexsearch-bulk-prepare" and t.is_alive()]


def test_prefetched_producer_that_finished_ahead_does_not_outlive_a_consumer_that_stops() -> None:
    gen = prefetched(iter(range(3)), 2)  # the producer fills the buffer, then waits to hand over its end
    assert next(gen) == 0
    time.sleep(0.3)
    gen.close()
    time.sleep(0.5)
    assert not [t for t in threading.enumerate() if t.name == "lexsearch-bulk-prepare" and t.is_alive()]


def test_cosine_scores_are_mapped_back() -> None:
    info = IndexInfo(field_map=FieldMap.lexsearch(), meta={}, dim=2, similarity="cosinesimil", indices=("x",))
    assert info.score_to_similarity(1.0) == 1.0 and info.score_to_similarity(0.5) == 0.0
    assert IndexInfo(FieldMap.lexsearch(), {}, 2, "l2_norm", ("x",)).score_to_similarity(0.3) == 0.3


def test_from_settings_wires_connection_and_engine_options(tmp_path) -> None:
    attach = tmp_path / "attach.toml"
    attach.write_text('index = "legacy"\nsearch = ["body"]\n', encoding="utf-8")
    settings = load_settings(environ={}, overrides={
        "backend": {"kind": "opensearch", "url": "https://node:9200/", "username": "u", "password": "p",
                    "api_key": "k", "timeout_s": 3},
        "engine": {"bulk_chunk": 50, "field_map": str(attach)}})
    backend = OpenSearchBackend.from_settings(settings.backend, settings.engine)
    conn = backend.connection
    assert (backend.url, conn.username, conn.password, conn.api_key, conn.timeout_s) == (
        "https://node:9200", "u", "p", "k", 3.0)
    assert backend.options.bulk_chunk == 50 and backend.catalog.field_maps[0].index == "legacy"
    assert backend.catalog.field_map_for("legacy", None).search == ("body",)
    assert backend.catalog.field_map_for("ours", {"format": 1}).managed
    es = ElasticsearchBackend.from_settings(BackendSettings(kind="elasticsearch", url="http://x:9201"))
    assert es.options == EngineSettings() and es.catalog.field_maps == ()
    with pytest.raises(IndexCorrupt, match="not created by lexsearch"):
        es.catalog.field_map_for("foreign", None)


def test_several_urls_make_one_cluster_backend() -> None:
    backend = OpenSearchBackend("http://127.0.0.1:9250/, http://127.0.0.1:9251")
    assert backend.url == "http://127.0.0.1:9250,http://127.0.0.1:9251"
    assert backend.connection.urls == ("http://127.0.0.1:9250", "http://127.0.0.1:9251")
    with pytest.raises(InvalidInput, match="must start with http"):
        OpenSearchBackend("http://127.0.0.1:9250,127.0.0.1:9251")
    with pytest.raises(ConfigError, match=r"backend\.url must start with http"):
        load_settings(environ={}, overrides={"backend": {"kind": "opensearch", "url": "http://a:1,b:2"}})


@pytest.mark.parametrize(("overrides", "message"), [
    ({"backend": {"kind": "elasticsearch", "url": "http://x:9201"}}, r"needs backend\.kind=opensearch"),
    ({"backend": {"kind": "opensearch", "url": "http://x:9200"}}, r"needs retrieval\.normalization=minmax"),
    ({"backend": {"kind": "opensearch", "url": "http://x:9200"},
      "retrieval": {"fusion": "rrf", "bm25_weight": 0.7, "knn_weight": 0.3}}, r"equal retrieval\.bm25_weight"),
])
def test_engine_fusion_settings_are_checked(overrides, message) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(environ={}, overrides={"engine": {"fusion": "engine"}, **overrides})


def test_engine_fusion_settings_that_the_engine_can_run() -> None:
    for retrieval in ({"normalization": "minmax"}, {"fusion": "rrf"}):
        settings = load_settings(environ={}, overrides={"engine": {"fusion": "engine"}, "retrieval": retrieval,
                                                        "backend": {"kind": "opensearch", "url": "http://x:9200"}})
        assert settings.engine.fusion == "engine"


def test_invalid_engine_settings_are_reported() -> None:
    with pytest.raises(ConfigError, match=r"engine\.synonyms_path must contain"):
        load_settings(environ={}, overrides={"engine": {"synonyms_path": "analysis/syn.txt"}})
    with pytest.raises(ConfigError, match=r"engine\.search_type must be one of auto"):
        load_settings(environ={"LEXSEARCH_ENGINE_SEARCH_TYPE": "dfs"})
    with pytest.raises(ConfigError, match=r"engine\.fusion must be client or engine"):
        load_settings(environ={"LEXSEARCH_ENGINE_FUSION": "server"})
    with pytest.raises(ConfigError, match=r"engine\.force_merge_timeout_s must be positive"):
        load_settings(environ={"LEXSEARCH_ENGINE_FORCE_MERGE_TIMEOUT_S": "0"})
    with pytest.raises(ConfigError, match=r"engine\.field_map file not found"):
        load_settings(environ={"LEXSEARCH_ENGINE_FIELD_MAP": "/no/such/file.toml"})
    with pytest.raises(InvalidInput, match="must start with http"):
        OpenSearchBackend("127.0.0.1:9200")


def test_incomplete_answers_are_recognised() -> None:
    assert incomplete({"_shards": {"total": 3, "successful": 3, "failed": 0}, "hits": {"hits": []}}) == ""
    partial = {"_shards": {"total": 3, "successful": 2, "failed": 1,
                           "failures": [{"reason": {"type": "node_disconnected_exception"}}]}}
    assert incomplete(partial) == "1 of 3 shards failed (node_disconnected_exception)"
    failed_item = {"error": {"type": "x"}, "status": 503}
    assert incomplete([{"_shards": {"failed": 0}}, failed_item]) == "HTTP 503 for one search"
    assert incomplete([{"error": {"type": "index_not_found_exception"}, "status": 404}]) == ""  # raised by the caller
    unread = [{"_id": "a", "found": True}, {"_id": "b", "error": {"type": "x"}}]
    assert incomplete(unread) == "document b could not be read"
