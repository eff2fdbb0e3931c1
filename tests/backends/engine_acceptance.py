"""Acceptance cases every engine backend (OpenSearch, Elasticsearch) must pass against a real node.

A test class inherits :class:`EngineAcceptance` and provides the ``engine`` fixture: an
:class:`EngineHandle` with the node URL and the backend class. Each test creates its own indices
(unique names) and deletes them afterwards.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pytest

from service.analysis.chain import analyzer_for
from service.backends import _requests as req
from service.backends.engine.backend import EngineBackend
from service.backends.engine.tasks import task_failure, wait_for_task
from service.backends.fieldmap import load_field_map
from service.config import EngineSettings
from service.corpus.model import Filters, LegalDoc
from service.corpus.views import embedding_text, section_key
from service.embeddings.cache import CachedEmbedder
from service.errors import EngineUnavailable, IndexCorrupt, IndexNotFound, InvalidInput
from service.indexing import citation_links_current, index_documents, rebuild_engine
from tests.support.engines import unique_index

ATTACH_TOML = """
index = "{index}"
id = "doc_no"
vector = "emb"
search = ["headline^2", "body"]
language = "de"

[fields]
citation = "reference"
text = "body"
title = "headline"
law = "statute"
date = "decided_on"
court = "court_name"
"""


@dataclass
class EngineHandle:
    """A real node, the backend class that talks to it and the node's credentials (none for OpenSearch)."""

    url: str
    backend_class: type[EngineBackend]
    auth: dict[str, str] = field(default_factory=dict)

    def backend(self, **kwargs: Any) -> EngineBackend:
        return self.backend_class(self.url, **{**self.auth, **kwargs})


class EngineAcceptance:
    """Inherit and provide the ``engine`` fixture (an :class:`EngineHandle`)."""

    @pytest.fixture
    def cleanup(self) -> Iterator[list[tuple[EngineBackend, str]]]:
        """Collects (backend, name) pairs to drop after the test."""
        created: list[tuple[EngineBackend, str]] = []
        yield created
        for backend, name in created:
            backend.drop(name)

    def _indexed(self, engine: EngineHandle, cleanup: list, docs: list[LegalDoc], embedder: CachedEmbedder,
                 prefix: str, **kwargs: Any) -> tuple[EngineBackend, str]:
        backend = engine.backend(**kwargs)
        name = unique_index(prefix)
        cleanup.append((backend, name))
        report = rebuild_engine(backend, name, embedder, docs, language="")
        assert report.ok, report.failed
        return backend, name

    def test_indexes_the_fixture_corpus_with_a_readable_source(self, engine, cleanup, mini_docs,
                                                               use_embedder) -> None:
        backend, name = self._indexed(engine, cleanup, mini_docs, use_embedder, "corpus")
        assert backend.count(name) == len(mini_docs)
        assert backend.alias_targets(name) == [f"{name}-v1"]
        stats = backend.stats(name)
        assert (stats.documents, stats.dim, stats.embedder, stats.languages) == (
            len(mini_docs), use_embedder.dim, use_embedder.name, ("de", "en", "zh"))
        raw = backend.api.search(name, {"query": {"ids": {"values": ["SR220_Art41_de"]}}})["hits"]["hits"][0]["_source"]
        assert raw["citation"] == "Art. 41 OR" and "widerrechtlich Schaden" in raw["text"]
        assert "bm25" not in raw and not any(key.startswith("body_") for key in raw)
        # the articles' headings: the index is flagged, and a fetch returns them (the fusion's sections)
        assert backend.metadata(name)["sections"] is True
        assert citation_links_current(backend.metadata(name))  # the citation rules the links were read by
        fetched = backend.fetch(name, ["SR210_Art471_de", "4958"])
        assert section_key(fetched["SR210_Art471_de"]) == section_key(next(d for d in mini_docs
                                                                           if d.id == "SR210_Art471_de"))
        assert section_key(fetched["4958"]) is None
        # idempotent ids: writing the corpus again replaces, never duplicates
        assert index_documents(backend, use_embedder, name, mini_docs, language="").ok
        assert backend.count(name) == len(mini_docs)

    def test_bm25_terms_weights_like_the_embedded_engine(self, engine, cleanup, mini_docs, use_embedder,
                                                          mini_embedded) -> None:
        backend, name = self._indexed(engine, cleanup, mini_docs, use_embedder, "terms")
        reference, ref_name = mini_embedded
        stem = analyzer_for("de").stem
        weights = {stem("Kaution"): 2.0, stem("Sicherheit"): 1.0, stem("Mieter"): 0.5}
        ours = [h.doc_id for h in backend.bm25_terms(name, weights, k=5)]
        theirs = [h.doc_id for h in reference.bm25_terms(ref_name, weights, k=5)]
        assert ours == theirs
        assert backend.bm25_terms(name, {"kaution": 0.0}, k=5) == []
        filtered = backend.bm25_terms(name, weights, k=10, filters=Filters.of(kind="statute"))
        assert filtered and all(h.doc_id.startswith("SR") for h in filtered)

    def test_alias_swap_rebuild_has_no_downtime(self, engine, cleanup, mini_docs, use_embedder) -> None:
        backend, name = self._indexed(engine, cleanup, mini_docs, use_embedder, "swap")
        vector = use_embedder.embed_queries(["Kaution Mietvertrag"])[0]
        errors: list[BaseException] = []
        seen: list[int] = []
        stop = threading.Event()
        reader = engine.backend()

        def search_forever() -> None:
            while not stop.is_set():
                try:
                    bm25_hits, knn_hits = reader.probe(name, "Kaution Mietvertrag", vector, k=5, lang="de")
                    assert bm25_hits and knn_hits
                    seen.append(reader.count(name))
                except BaseException as exc:  # collected and asserted on below
                    errors.append(exc)
                    return

        thread = threading.Thread(target=search_forever, daemon=True)
        thread.start()
        try:
            smaller = [d for d in mini_docs if d.id != "17086"]
            report = rebuild_engine(backend, name, use_embedder, smaller, language="")
            assert report.ok
            time.sleep(0.3)
        finally:
            stop.set()
            thread.join(timeout=30)
        assert not errors, errors
        assert seen and set(seen) <= {len(mini_docs), len(mini_docs) - 1}
        assert backend.alias_targets(name) == [f"{name}-v2"]
        assert backend.versions(name) == [f"{name}-v2"]  # v1 deleted after the swap
        assert backend.count(name) == len(mini_docs) - 1
        # a reindex from the index's own documents and vectors (no corpus needed) moves to v3
        before = [h.doc_id for h in backend.bm25(name, "Testament Drohung", k=5, lang="de")]
        assert backend.reindex(name).indexed == len(mini_docs) - 1
        assert backend.alias_targets(name) == [f"{name}-v3"] and backend.versions(name) == [f"{name}-v3"]
        assert [h.doc_id for h in backend.bm25(name, "Testament Drohung", k=5, lang="de")] == before

    def test_attaches_to_an_index_with_foreign_field_names(self, engine, cleanup, mini_docs, use_embedder,
                                                           tmp_path) -> None:
        owner = engine.backend()
        name = f"legacy-{uuid.uuid4().hex[:8]}"
        cleanup.append((owner, name))
        german = [d for d in mini_docs if d.lang == "de"]
        create_foreign_index(owner, name, german, use_embedder)
        config = tmp_path / "attach.toml"
        config.write_text(ATTACH_TOML.format(index=name), encoding="utf-8")
        backend = engine.backend(field_maps=[load_field_map(config)])

        assert backend.count(name) == len(german)
        # BM25 through the index's own analyzers (german), on its own text fields
        assert [h.doc_id for h in backend.bm25(name, "Mietkaution", k=5)] == ["BGE_142_III_100"]
        assert "4A_32/2018" in [h.doc_id for h in backend.bm25(name, "Kaution des Mieters", k=3)]
        doc = next(d for d in german if d.id == "SR220_Art41_de")
        vector = use_embedder.embed_documents([embedding_text(doc)])[0]
        knn = backend.knn(name, vector, k=3)
        assert knn[0].doc_id == doc.id and knn[0].scores["knn"] == pytest.approx(1.0, abs=1e-3)
        only_zgb = {h.doc_id for h in backend.knn(name, vector, k=50, filters=Filters.of(law="ZGB"))}
        assert only_zgb == {d.id for d in german if d.law == "ZGB"}
        dated = backend.bm25(name, "Mieter", k=50, filters=Filters.of(date_from="2017-01-01"))
        assert {h.doc_id for h in dated} <= {d.id for d in german if d.date and d.date >= "2017-01-01"}
        bm25_hits, knn_hits = backend.probe(name, "Schaden ersetzen", vector, k=4)
        assert bm25_hits and knn_hits
        fetched = backend.fetch(name, ["SR220_Art41_de", "4A_32/2018", "missing"])
        assert set(fetched) == {"SR220_Art41_de", "4A_32/2018"}
        assert fetched["4A_32/2018"].citation == "4A_32/2018" and fetched["4A_32/2018"].court == "BGer"
        assert fetched["SR220_Art41_de"].text == doc.text and fetched["SR220_Art41_de"].lang == "de"
        assert backend.stats(name).extra["attached"] is True
        with pytest.raises(InvalidInput, match="attached read-only"):
            backend.write(name, [doc], vector[None, :])
        # without a field map the index is refused with a pointer to the field map
        with pytest.raises(IndexCorrupt, match="field map"):
            engine.backend().bm25(name, "Kaution", k=3)

    def test_bulk_reports_documents_that_violate_the_mapping(self, engine, cleanup, mini_docs,
                                                             use_embedder) -> None:
        backend = engine.backend()
        name = unique_index("bulk")
        cleanup.append((backend, name))
        backend.ensure_index(name, language="", dim=use_embedder.dim, embedder=use_embedder.name)
        batch = list(mini_docs[:6])
        bad_date = replace(batch[1])
        object.__setattr__(bad_date, "date", "31.12.2019")  # bypasses LegalDoc's check, like a corrupt record
        batch[1] = bad_date
        batch[3] = LegalDoc.from_dict({**batch[3].to_dict(), "citation": "x" * 40_000})  # an immense keyword
        vectors = use_embedder.embed_documents([embedding_text(d) for d in batch])
        vectors[4, 0] = np.nan
        report = backend.write(name, batch, vectors)
        assert report.sent == 6 and report.indexed == 3
        assert set(report.failed) == {batch[1].id, batch[3].id, batch[4].id}
        assert "date" in report.failed[batch[1].id] and "HTTP 400" in report.failed[batch[1].id]
        assert "immense" in report.failed[batch[3].id] or "max_bytes_length" in report.failed[batch[3].id]
        assert "non-finite" in report.failed[batch[4].id]
        assert backend.count(name) == 3
        assert set(backend.fetch(name, [d.id for d in batch])) == {batch[0].id, batch[2].id, batch[5].id}

    def test_bulk_retries_rejections_with_backoff(self, engine, cleanup, mini_docs, use_embedder) -> None:
        options = EngineSettings(bulk_retries=6, bulk_backoff_s=0.3)
        backend = engine.backend(options=options)
        name = unique_index("retry")
        cleanup.append((backend, name))
        backend.ensure_index(name, language="", dim=use_embedder.dim, embedder=use_embedder.name)
        physical = backend.alias_targets(name)[0]
        docs = list(mini_docs[:10])
        vectors = use_embedder.embed_documents([embedding_text(d) for d in docs])
        # the flood-stage block answers every write with HTTP 429 until it is lifted
        block = {"index": {"blocks": {"read_only_allow_delete": True}}}
        unblock = {"index": {"blocks": {"read_only_allow_delete": None}}}
        backend.api.put_settings(physical, block)
        timer = threading.Timer(1.2, backend.api.put_settings, args=(physical, unblock))
        timer.start()
        try:
            report = backend.write(name, docs, vectors)
        finally:
            timer.join()
        assert report.ok and report.indexed == 10
        assert backend.count(name) == 10
        # a block that stays: every document is reported with the engine's 429, nothing is lost silently
        backend.api.put_settings(physical, block)
        try:
            stubborn = engine.backend(options=EngineSettings(bulk_retries=1, bulk_backoff_s=0.1))
            report = stubborn.write(name, docs[:3], vectors[:3])
        finally:
            backend.api.put_settings(physical, unblock)
        outcome = f"indexed {report.indexed}, failed {report.failed}"
        assert report.indexed == 0 and set(report.failed) == {d.id for d in docs[:3]}, outcome
        assert all("HTTP 429" in reason for reason in report.failed.values()), outcome

    def test_an_old_version_that_cannot_be_deleted_does_not_fail_the_publish(self, engine, cleanup, mini_docs,
                                                                               use_embedder, caplog,
                                                                               monkeypatch) -> None:
        backend, name = self._indexed(engine, cleanup, mini_docs, use_embedder, "stale")
        first = f"{name}-v1"

        def cluster_times_out(indices: list[str]) -> None:  # the engine stays real; only this request fails
            raise EngineUnavailable(f"deleting {indices} timed out")

        with monkeypatch.context() as patch:
            patch.setattr(backend.api, "delete_indices", cluster_times_out)
            with caplog.at_level(logging.WARNING, logger="service.backends.engine.lifecycle"):
                report = rebuild_engine(backend, name, use_embedder, mini_docs, language="")
        assert report.ok and backend.alias_targets(name) == [f"{name}-v2"]  # the new version is live
        assert backend.count(name) == len(mini_docs) and backend.exists(first)
        assert f"deleting the older versions {first} failed" in caplog.text
        physical = backend.create_version(name, language="", dim=use_embedder.dim, embedder=use_embedder.name)
        assert backend.publish(name, physical) == [first, f"{name}-v2"]  # the next publish deletes what was left
        assert not backend.exists(first) and backend.alias_targets(name) == [physical]

    def test_publish_force_merges_as_a_task_it_polls(self, engine, cleanup, mini_docs, use_embedder) -> None:
        backend, name = self._indexed(engine, cleanup, mini_docs, use_embedder, "merge")
        physical = backend.alias_targets(name)[0]
        answer = backend.api.client.indices.segments(index=physical)
        shards = getattr(answer, "body", answer)["indices"][physical]["shards"]
        # publish merged every shard to one segment
        assert shards and all(copy["num_search_segments"] == 1 for copies in shards.values() for copy in copies)
        task_id = backend.api.start_forcemerge(physical)
        status = wait_for_task(lambda: backend.api.task(task_id), timeout_s=60, what="the force-merge")
        assert status["completed"] and task_failure(status) == ""
        assert status["task"]["action"] == "indices:admin/forcemerge"

    def test_index_errors_are_clear(self, engine, cleanup, mini_docs, use_embedder) -> None:
        backend = engine.backend()
        with pytest.raises(IndexNotFound, match="no index or alias named"):
            backend.bm25("lexsearch-test-does-not-exist", "x", k=3)
        with pytest.raises(IndexNotFound):
            backend.count("lexsearch-test-does-not-exist")
        assert not backend.exists("lexsearch-test-does-not-exist")
        with pytest.raises(InvalidInput, match="invalid engine index name"):
            backend.exists("Has Upper")
        name = unique_index("meta")
        cleanup.append((backend, name))
        backend.ensure_index(name, language="de", dim=use_embedder.dim, embedder=use_embedder.name)
        backend.ensure_index(name, language="de", dim=use_embedder.dim, embedder=use_embedder.name)  # idempotent
        with pytest.raises(IndexCorrupt, match="was built with embedder"):
            backend.ensure_index(name, language="de", dim=384, embedder="e5-small-q4")
        with pytest.raises(InvalidInput, match="shape"):
            backend.write(name, mini_docs[:2], np.zeros((2, 3), dtype=np.float32))
        assert backend.metadata(name) == {}
        backend.update_metadata(name, calibration={"qsi_a": 0.4})
        backend.update_metadata(name, note="x")
        assert engine.backend().metadata(name) == {"calibration": {"qsi_a": 0.4}, "note": "x"}
        assert name in backend.list_indices()


def create_foreign_index(owner: EngineBackend, name: str, docs: list[LegalDoc], embedder: CachedEmbedder) -> None:
    """An index with field names of its own, written through the raw client (not lexsearch's layout)."""
    german = {"type": "text", "analyzer": "german"}
    body: dict[str, Any] = {
        "settings": {"index": {"number_of_shards": 1, "number_of_replicas": 0}},
        "mappings": {"properties": {
            "doc_no": {"type": "keyword"}, "reference": {"type": "keyword"}, "headline": german, "body": german,
            "statute": {"type": "keyword"}, "decided_on": {"type": "date"}, "court_name": {"type": "keyword"},
            "emb": req.vector_mapping(owner.engine, embedder.dim, req.HnswParams(16, 64)),
        }},
    }
    if owner.engine is req.Engine.OPENSEARCH:
        body["settings"]["index"]["knn"] = True
    owner.api.create_index(name, body)
    vectors = embedder.embed_documents([embedding_text(d) for d in docs])
    actions = []
    for doc, vector in zip(docs, vectors, strict=True):
        source = {"doc_no": doc.id, "reference": doc.citation, "headline": doc.title, "body": doc.text,
                  "statute": doc.law, "court_name": doc.court, "emb": vector.tolist()}
        if doc.date:
            source["decided_on"] = doc.date
        actions.append({"_op_type": "index", "_index": name, "_id": uuid.uuid4().hex, "_source": source})
    results = list(owner.api.bulk(actions))
    assert all(ok for ok, _ in results), results
    owner.api.refresh(name)
