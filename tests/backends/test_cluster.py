"""Multi-node clusters of real nodes (scripts/<engine>-local start --nodes 3), for both engines.

* The backend contract holds on an index of 3 shards with a replica each.
* BM25 on 3 shards scores like the embedded engine (one set of statistics, ``dfs_query_then_fetch``),
  and visibly does not with per-shard statistics.
* ``kill -9`` of a node during a search load: every search answers, with the same BM25 ranking.
* ``kill -9`` of a node during a bulk index: the index completes, documents in == documents indexed.
* OpenSearch fuses hybrid searches natively (neural-search plugin) like the client does.

Each engine's cluster runs on free ports in its own engine home (see :class:`LocalCluster`) and is
stopped and deleted after the module.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import numpy as np
import pytest

from service.backends.base import NativeFusion
from service.backends.elasticsearch import ElasticsearchBackend
from service.backends.engine.backend import EngineBackend
from service.backends.opensearch import OpenSearchBackend
from service.config import EngineSettings, RetrievalSettings, load_settings
from service.corpus.model import LegalDoc
from service.corpus.views import embedding_text
from service.errors import ConfigError
from service.indexing import rebuild_engine
from service.pipelines.base import Probe, SearchRequest
from service.pipelines.build import Runtime
from service.pipelines.hybrid import HybridPipeline
from tests.backends.conformance import QUERIES, BackendConformance
from tests.support.engines import ELASTICSEARCH_CREDENTIALS, LocalCluster, unique_index

pytestmark = pytest.mark.engine

BACKENDS: dict[str, tuple[type[EngineBackend], dict[str, str]]] = {
    "opensearch": (OpenSearchBackend, {}),
    "elasticsearch": (ElasticsearchBackend, ELASTICSEARCH_CREDENTIALS.kwargs),
}
SHARDED = EngineSettings(shards=3, replicas=1)
LOAD_AFTER_KILL_S = 8.0
EQUAL = {"bm25": 0.5, "knn": 0.5}

MakeBackend = Callable[..., EngineBackend]


@pytest.fixture(scope="module", params=sorted(BACKENDS))
def cluster(request: pytest.FixtureRequest) -> Iterator[tuple[LocalCluster, MakeBackend]]:
    """A 3-node cluster of one engine, and a factory of backends talking to all its nodes."""
    started = LocalCluster.start_new(request.param)
    backend_class, auth = BACKENDS[request.param]

    def make(**kwargs: object) -> EngineBackend:
        return backend_class(",".join(started.urls), **auth, **kwargs)  # type: ignore[arg-type]

    try:
        yield started, make
    finally:
        started.stop()


@pytest.fixture
def whole(cluster: tuple[LocalCluster, MakeBackend]) -> tuple[LocalCluster, MakeBackend]:
    """The cluster with every node running (a node killed by an earlier test is started again)."""
    cluster[0].start()
    return cluster


def sharded_index(make: MakeBackend, docs: list[LegalDoc], embedder, prefix: str,
                  options: EngineSettings = SHARDED) -> tuple[EngineBackend, str]:
    backend = make(options=options)
    name = unique_index(prefix)
    report = rebuild_engine(backend, name, embedder, docs, language="")
    assert report.ok, report.failed
    wait_for_green(backend, name)
    return backend, name


def wait_for_green(backend: EngineBackend, name: str) -> None:
    """Until every replica is allocated (a node loss must not lose a shard)."""
    assert backend.api.wait_for_green(name, 120.0) == "green"


class TestShardedConformance(BackendConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def backend_index(cls, cluster, mini_docs, use_embedder):
        cluster[0].start()
        backend, name = sharded_index(cluster[1], mini_docs, use_embedder, "cluster-conformance")
        assert backend.catalog.info(name).shards == 3
        yield backend, name
        backend.drop(name)


def test_three_shards_score_bm25_like_one(whole, mini_docs, use_embedder, mini_embedded) -> None:
    _, make = whole
    backend, name = sharded_index(make, mini_docs, use_embedder, "cluster-dfs")
    per_shard = make(options=replace(SHARDED, search_type="query_then_fetch"))
    reference, ref_name = mini_embedded
    drift = 0.0
    try:
        for query, lang in QUERIES:
            theirs = {h.doc_id: h.score for h in reference.bm25(ref_name, query, k=10, lang=lang)}
            ours = {h.doc_id: h.score for h in backend.bm25(name, query, k=10, lang=lang)}
            assert set(ours) == set(theirs)
            assert all(ours[d] == pytest.approx(theirs[d], rel=1e-4) for d in theirs)
            local = {h.doc_id: h.score for h in per_shard.bm25(name, query, k=10, lang=lang)}
            drift = max([drift] + [abs(local[d] - theirs[d]) / theirs[d] for d in set(local) & set(theirs)])
    finally:
        backend.drop(name)
    assert drift > 0.01  # per-shard statistics do drift: dfs is what keeps parity


def test_native_hybrid_fuses_like_the_client(whole, mini_docs, use_embedder) -> None:
    _, make = whole
    backend = make(options=SHARDED)
    if not isinstance(backend, NativeFusion):  # Elasticsearch: the rrf/linear retrievers are not in its Maven build
        with pytest.raises(ConfigError, match=r"needs backend\.kind=opensearch"):
            load_settings(environ={}, overrides={"engine": {"fusion": "engine"}, "backend": {
                "kind": backend.kind, "url": backend.url}})
        return
    # one shard: the engine fuses exactly the lists the client would (several shards: see test below)
    backend, name = sharded_index(make, mini_docs, use_embedder, "cluster-hybrid", replace(SHARDED, shards=1))
    vectors = use_embedder.embed_queries([q for q, _ in QUERIES])
    rrf, linear = RetrievalSettings(fusion="rrf"), RetrievalSettings(fusion="linear", normalization="minmax")
    try:
        for fusion, scale in ((rrf, 1 / EQUAL["bm25"]), (linear, 1.0)):  # the engine's RRF has no weights
            client = HybridPipeline(backend, use_embedder, fusion)
            for (query, lang), vector in zip(QUERIES, vectors, strict=True):
                native = backend.hybrid(name, query, vector, k=10, fusion=fusion, weights=EQUAL, lang=lang)
                fused = client.fuse(Probe(*backend.probe(name, query, vector, k=10, lang=lang), vector))
                theirs = {h.doc_id: h.score * scale for h in fused}
                assert len(native) == min(10, len(fused)) and {h.doc_id for h in native} <= set(theirs)
                # (min-max: the engine maps a list's minimum to 0.001, the client to 0)
                assert all(h.score == pytest.approx(theirs[h.doc_id], rel=1e-4, abs=1e-3) for h in native), query
                best = sorted(theirs.values(), reverse=True)[: len(native)]  # the same top scores (ties may swap)
                assert [h.score for h in native] == pytest.approx(best, rel=1e-4, abs=1e-3)
                assert native[0].scores == {"hybrid": native[0].score} and native[0].ranks == {"hybrid": 1}
        # the hybrid pipeline hands the fusion to the engine when engine.fusion = engine
        settings = load_settings(environ={}, overrides={
            "backend": {"kind": "opensearch", "url": backend.url}, "engine": {"fusion": "engine"},
            "retrieval": {"normalization": "minmax"}})
        query, lang = QUERIES[0]
        response = Runtime(settings, backend=backend, embedder=use_embedder).pipeline("hybrid").run(
            SearchRequest(query, index=name, k=5, lang=lang))
        assert response.trace["fusion"] == "engine"
        expected = backend.hybrid(name, query, vectors[0], k=settings.retrieval.depth, fusion=settings.retrieval,
                                  weights=EQUAL, lang=lang)
        assert [h.doc_id for h in response.hits] == [h.doc_id for h in expected[:5]]
    finally:
        backend.drop(name)


def test_native_hybrid_on_several_shards_returns_each_document_once(whole, mini_docs, use_embedder) -> None:
    _, make = whole
    if not isinstance(make(), NativeFusion):
        return  # Elasticsearch: see above
    backend, name = sharded_index(make, mini_docs, use_embedder, "cluster-hybrid3")
    try:
        for (query, lang), vector in zip(QUERIES, use_embedder.embed_queries([q for q, _ in QUERIES]), strict=True):
            ids = [h.doc_id for h in backend.hybrid(name, query, vector, k=10, fusion=RetrievalSettings(fusion="rrf"),
                                                    weights=EQUAL, lang=lang)]
            assert ids and len(ids) == len(set(ids))
    finally:
        backend.drop(name)


def test_every_search_answers_through_a_node_loss(whole, mini_docs, use_embedder) -> None:
    cluster, make = whole
    backend, name = sharded_index(make, mini_docs, use_embedder, "cluster-search")
    vectors = use_embedder.embed_queries([q for q, _ in QUERIES])
    expected = [[h.doc_id for h in backend.bm25(name, q, k=5, lang=lang)] for q, lang in QUERIES]
    errors: list[BaseException] = []
    answered: list[float] = []
    stop = threading.Event()

    def search_load() -> None:
        reader = make(options=SHARDED)
        while not stop.is_set():
            for (query, lang), vector, ids in zip(QUERIES, vectors, expected, strict=True):
                try:
                    bm25_hits, knn_hits = reader.probe(name, query, vector, k=5, lang=lang)
                    assert [h.doc_id for h in bm25_hits] == ids and len(knn_hits) == 5
                    assert set(reader.fetch(name, ids)) == set(ids)
                    answered.append(time.monotonic())
                except BaseException as exc:  # collected and asserted on below
                    errors.append(exc)

    threads = [threading.Thread(target=search_load, daemon=True) for _ in range(2)]
    try:
        for thread in threads:
            thread.start()
        time.sleep(2.0)
        killed_at = time.monotonic()
        cluster.kill(1)
        time.sleep(LOAD_AFTER_KILL_S)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    try:
        assert not errors, errors[:3]
        assert sum(t > killed_at for t in answered) >= 10
        assert sorted(cluster.pids()) == [0, 2]
        assert backend.count(name) == len(mini_docs)
    finally:
        backend.drop(name)


def test_bulk_index_completes_through_a_node_loss(whole, mini_docs, use_embedder) -> None:
    cluster, make = whole
    base = use_embedder.embed_documents([embedding_text(d) for d in mini_docs])
    copies = 60
    docs = [LegalDoc.from_dict({**d.to_dict(), "id": f"{d.id}#{i}"}) for i in range(copies) for d in mini_docs]
    vectors = np.tile(base, (copies, 1))
    backend = make(options=replace(SHARDED, bulk_chunk=100))
    name = unique_index("cluster-bulk")
    physical = backend.create_version(name, language="", dim=use_embedder.dim, embedder=use_embedder.name)
    # Until every replica is allocated: a primary whose replica is still initialising when its node
    # dies leaves the shard red, and every write to it waits out the engine's 1-minute timeout.
    wait_for_green(backend, physical)
    first_chunk = threading.Event()
    reports = []
    failures: list[BaseException] = []

    def bulk_index() -> None:
        try:
            for start in range(0, len(docs), 500):
                reports.append(backend.write(physical, docs[start:start + 500], vectors[start:start + 500]))
                first_chunk.set()
        except BaseException as exc:  # asserted on below
            failures.append(exc)
            first_chunk.set()

    writer = threading.Thread(target=bulk_index, daemon=True)
    writer.start()
    try:
        assert first_chunk.wait(timeout=300)
        assert writer.is_alive(), "the bulk index finished before the node could be killed"
        cluster.kill(2)
        writer.join(timeout=600)
        assert not writer.is_alive(), f"the bulk index is still running 10 minutes after the node loss ({reports})"
        assert not failures, failures
        backend.publish(name, physical)
        assert sum(r.sent for r in reports) == len(docs)
        assert sum(r.indexed for r in reports) == len(docs) and not any(r.failed for r in reports)
        assert backend.count(name) == len(docs)
        assert sorted(cluster.pids()) == [0, 1]
    finally:
        backend.drop(name)


def test_a_load_without_replicas_gets_them_when_published(whole, mini_docs, use_embedder) -> None:
    """``engine.load_replicas = 0``: the version is loaded with no replica, and published with ``replicas``."""
    _, make = whole
    backend = make(options=replace(SHARDED, load_replicas=0))
    name = unique_index("cluster-load")
    vectors = use_embedder.embed_documents([embedding_text(d) for d in mini_docs])
    physical = backend.create_version(name, language="", dim=use_embedder.dim, embedder=use_embedder.name)
    try:
        assert replica_setting(backend, physical) == 0
        report = backend.write(physical, mini_docs, vectors)
        assert report.indexed == len(mini_docs) and not report.failed
        backend.publish(name, physical)
        assert replica_setting(backend, physical) == 1
        assert backend.api.wait_for_green(physical, 1.0) == "green"  # publish waited for the copies
        assert backend.count(name) == len(mini_docs)
    finally:
        backend.drop(name)


def replica_setting(backend: EngineBackend, index: str) -> int:
    client = backend.api.client
    if isinstance(backend, OpenSearchBackend):
        found = client.indices.get_settings(index=index, name="index.number_of_replicas", flat_settings=True)
    else:
        found = client.indices.get_settings(index=index, name="index.number_of_replicas", flat_settings=True).body
    return int(found[index]["settings"]["index.number_of_replicas"])
