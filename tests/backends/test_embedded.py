"""The embedded engine (tantivy + faiss): the shared contract plus persistence and failure cases."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from service.backends.embedded import EmbeddedBackend
from service.corpus.model import Filters, LegalDoc
from service.embeddings.cache import CachedEmbedder
from service.errors import IndexCorrupt, IndexNotFound
from service.indexing import citation_rules, index_documents
from tests.backends.conformance import QUERIES, BackendConformance, WorkConformance

pytestmark = pytest.mark.unit


def _build(root: Path, docs: list[LegalDoc], embedder: CachedEmbedder, **kwargs) -> EmbeddedBackend:
    backend = EmbeddedBackend(root, **kwargs)
    assert index_documents(backend, embedder, "mini", docs, language="").ok
    return backend


class TestEmbeddedFlat(BackendConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def backend_index(cls, tmp_path_factory, mini_docs, use_embedder):
        return _build(tmp_path_factory.mktemp("flat"), mini_docs, use_embedder), "mini"

    def test_uses_a_flat_vector_index(self, backend_index) -> None:
        backend, name = backend_index
        assert backend.manifest(name)["vector_index"] == "flat"


class TestEmbeddedHnsw(BackendConformance):
    """The same contract when the corpus is 'large' (threshold lowered), so faiss builds HNSW."""

    @pytest.fixture(scope="class")
    @classmethod
    def backend_index(cls, tmp_path_factory, mini_docs, use_embedder):
        return _build(tmp_path_factory.mktemp("hnsw"), mini_docs, use_embedder, hnsw_min_docs=10), "mini"

    def test_uses_an_hnsw_vector_index(self, backend_index) -> None:
        backend, name = backend_index
        assert backend.manifest(name)["vector_index"] == "hnsw"

    def test_filtered_hnsw_search_through_the_bitmap_selector(self, backend_index, use_embedder, mini_docs,
                                                              monkeypatch) -> None:
        import service.backends.embedded as embedded

        monkeypatch.setattr(embedded, "EXACT_SCAN_MAX", 0)  # force the faiss selector path
        backend, name = backend_index
        filters = Filters.of(lang="zh")
        vector = use_embedder.embed_queries(["劳动合同 解除"])[0]
        ids = {h.doc_id for h in backend.knn(name, vector, k=100, filters=filters)}
        assert ids == {d.id for d in mini_docs if d.lang == "zh"}


class TestEmbeddedWorks(WorkConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def works_index(cls, trilingual_embedded):
        return trilingual_embedded


class TestEmbeddedHnswWorks(WorkConformance):
    """Versions collapse the same way in an HNSW vector index."""

    @pytest.fixture(scope="class")
    @classmethod
    def works_index(cls, tmp_path_factory, trilingual_docs, use_embedder):
        backend = EmbeddedBackend(tmp_path_factory.mktemp("hnsw-works"), hnsw_min_docs=10)
        assert index_documents(backend, use_embedder, "works", trilingual_docs, language="de").ok
        assert backend.manifest("works")["vector_index"] == "hnsw"
        return backend, "works"


def test_an_index_written_before_works_existed_is_read_and_upgraded(tmp_path, trilingual_docs, use_embedder) -> None:
    import sqlite3

    backend = EmbeddedBackend(tmp_path)
    plain = [LegalDoc.from_dict({**d.to_dict(), "versions": []}) for d in trilingual_docs[:6]]
    assert index_documents(backend, use_embedder, "old", plain, language="de").ok
    db = sqlite3.connect(tmp_path / "old" / "docs.sqlite")
    with db:  # the table as lexsearch created it before the work column
        db.execute("ALTER TABLE docs DROP COLUMN work")
    db.close()
    reopened = EmbeddedBackend(tmp_path)
    assert len(reopened.bm25("old", "Vertrag Antrag Annahme", k=10, lang="de")) > 1
    assert index_documents(reopened, use_embedder, "old", trilingual_docs, language="de").ok
    ids = [h.doc_id for h in reopened.bm25("old", "Vertrag Antrag Annahme", k=50, lang="de")]
    assert ids and len(ids) == len(set(ids))


def test_reopening_gives_identical_results(tmp_path, mini_docs, use_embedder) -> None:
    first = _build(tmp_path, mini_docs, use_embedder)
    before = []
    for query, lang in QUERIES:
        vector = use_embedder.embed_queries([query])[0]
        before.append((first.bm25("mini", query, k=10, lang=lang), first.knn("mini", vector, k=10)))
    reopened = EmbeddedBackend(tmp_path)
    for (query, lang), (bm25_hits, knn_hits) in zip(QUERIES, before, strict=True):
        vector = use_embedder.embed_queries([query])[0]
        assert [(h.doc_id, h.score) for h in reopened.bm25("mini", query, k=10, lang=lang)] == \
               [(h.doc_id, h.score) for h in bm25_hits]
        assert [(h.doc_id, h.score) for h in reopened.knn("mini", vector, k=10)] == \
               [(h.doc_id, h.score) for h in knn_hits]


def test_hnsw_compacts_after_many_deletions(tmp_path, mini_docs, use_embedder) -> None:
    backend = _build(tmp_path, mini_docs, use_embedder, hnsw_min_docs=10)
    victims = [d.id for d in mini_docs[:15]]
    backend.delete("mini", victims)
    manifest = backend.manifest("mini")
    assert manifest["vector_index"] == "hnsw"
    assert manifest["dead_vectors"] == 0  # 15 of 54 dead crossed the threshold, so the graph was rebuilt
    vector = use_embedder.embed_queries(["Kaution"])[0]
    ids = {h.doc_id for h in backend.knn("mini", vector, k=100)}
    assert ids == {d.id for d in mini_docs} - set(victims)


def test_another_process_sees_new_writes(tmp_path, mini_docs, use_embedder) -> None:
    writer = _build(tmp_path, mini_docs, use_embedder)
    reader = EmbeddedBackend(tmp_path)
    assert reader.count("mini") == len(mini_docs)
    writer.delete("mini", ["17086"])
    assert reader.count("mini") == len(mini_docs) - 1
    assert "17086" not in [h.doc_id for h in reader.bm25("mini", "通知工会", k=10, lang="zh")]


def test_missing_index_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(IndexNotFound, match="no index named 'nope'"):
        EmbeddedBackend(tmp_path).bm25("nope", "x", k=5)


def test_folder_without_manifest_is_corrupt(tmp_path) -> None:
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "something.txt").write_text("x")
    with pytest.raises(IndexCorrupt, match="holds no index"):
        EmbeddedBackend(tmp_path).bm25("junk", "x", k=5)


def test_unreadable_manifest_is_corrupt(tmp_path, mini_docs, use_embedder) -> None:
    _build(tmp_path, mini_docs[:3], use_embedder)
    (tmp_path / "mini" / "manifest.json").write_text("{not json")
    with pytest.raises(IndexCorrupt, match="unreadable manifest"):
        EmbeddedBackend(tmp_path).count("mini")


def test_missing_vector_file_is_corrupt(tmp_path, mini_docs, use_embedder) -> None:
    _build(tmp_path, mini_docs[:3], use_embedder)
    (tmp_path / "mini" / "vectors.faiss").unlink()
    with pytest.raises(IndexCorrupt, match="cannot be read"):
        EmbeddedBackend(tmp_path).count("mini")


def test_interrupted_write_is_reported(tmp_path, mini_docs, use_embedder) -> None:
    _build(tmp_path, mini_docs[:3], use_embedder)
    path = tmp_path / "mini" / "manifest.json"
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps({**manifest, "state": "writing"}))
    with pytest.raises(IndexCorrupt, match="interrupted write"):
        EmbeddedBackend(tmp_path).count("mini")


def test_embedder_mismatch_is_refused(tmp_path, mini_docs, use_embedder) -> None:
    backend = _build(tmp_path, mini_docs[:3], use_embedder)
    with pytest.raises(IndexCorrupt, match="was built with embedder"):
        backend.ensure_index("mini", language="de", dim=384, embedder="e5-small-q4")


def test_one_bad_vector_fails_only_its_document(tmp_path, mini_docs, use_embedder) -> None:
    backend = EmbeddedBackend(tmp_path)
    backend.ensure_index("mini", language="", dim=use_embedder.dim, embedder=use_embedder.name)
    vectors = use_embedder.embed_documents([d.text for d in mini_docs[:3]])
    vectors[1, 0] = np.nan
    report = backend.write("mini", mini_docs[:3], vectors)
    assert report.indexed == 2
    assert list(report.failed) == [mini_docs[1].id]
    assert "non-finite" in report.failed[mini_docs[1].id]


def test_copying_the_folder_copies_the_index(tmp_path, mini_docs, use_embedder) -> None:
    _build(tmp_path / "a", mini_docs, use_embedder)
    shutil.copytree(tmp_path / "a" / "mini", tmp_path / "b" / "mini")
    assert EmbeddedBackend(tmp_path / "b").count("mini") == len(mini_docs)


def test_metadata_is_stored_with_the_index(tmp_path, mini_docs, use_embedder) -> None:
    backend = _build(tmp_path, mini_docs[:3], use_embedder)
    assert backend.metadata("mini") == {"citation_rules": citation_rules()}  # written by indexing
    backend.update_metadata("mini", calibration={"qsi_a": 0.4, "qsi_b": 11.0})
    backend.update_metadata("mini", note="x")
    assert EmbeddedBackend(tmp_path).metadata("mini") == {
        "citation_rules": citation_rules(), "calibration": {"qsi_a": 0.4, "qsi_b": 11.0}, "note": "x"}


def test_searches_stay_consistent_while_another_thread_writes(tmp_path, mini_docs, use_embedder) -> None:
    import threading

    backend = _build(tmp_path, mini_docs, use_embedder)
    known = {d.id for d in mini_docs}
    vector = use_embedder.embed_queries(["Kaution"])[0]
    errors: list[BaseException] = []
    stop = threading.Event()

    def search() -> None:
        try:
            while not stop.is_set():
                for hit in backend.bm25("mini", "Vermieter Kaution", k=10, lang="de") + \
                        backend.knn("mini", vector, k=10):
                    assert hit.doc_id in known
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=search) for _ in range(3)]
    for t in threads:
        t.start()
    docs = [d for d in mini_docs if d.lang == "de"][:5]
    vectors = use_embedder.embed_documents([d.text for d in docs])
    for _ in range(5):
        backend.write("mini", docs, vectors)
        backend.delete("mini", [docs[0].id])
    stop.set()
    for t in threads:
        t.join()
    assert not errors
    assert backend.count("mini") == len(mini_docs) - 1


def test_a_bulk_load_publishes_its_chunks_together_and_nothing_when_it_fails(tmp_path, mini_docs,
                                                                              use_embedder) -> None:
    backend = _build(tmp_path, mini_docs[:3], use_embedder)
    vectors = use_embedder.embed_documents([d.text for d in mini_docs])
    with pytest.raises(RuntimeError, match="source broke"), backend.bulk("mini") as write:
        write(mini_docs[3:6], vectors[3:6])
        raise RuntimeError("source broke")
    assert backend.count("mini") == 3
    assert json.loads((tmp_path / "mini" / "manifest.json").read_text())["state"] == "ready"
    assert EmbeddedBackend(tmp_path).count("mini") == 3
    with backend.bulk("mini") as write:
        write(mini_docs[3:6], vectors[3:6])
        assert backend.count("mini") == 3  # searches see the old state until the load ends
        write(mini_docs[6:], vectors[6:])
    assert backend.count("mini") == len(mini_docs)
    assert EmbeddedBackend(tmp_path).count("mini") == len(mini_docs)


def test_a_write_whose_stores_cannot_be_opened_leaves_the_index_ready(tmp_path, mini_docs, use_embedder) -> None:
    backend = _build(tmp_path, mini_docs[:3], use_embedder)
    vectors = use_embedder.embed_documents([d.text for d in mini_docs[3:5]])
    held = backend.index("mini").snapshot().tantivy.writer(heap_size=15_000_000, num_threads=1)
    try:
        with pytest.raises(ValueError):  # tantivy: another writer holds the index lock
            backend.write("mini", mini_docs[3:5], vectors)
    finally:
        del held
    assert json.loads((tmp_path / "mini" / "manifest.json").read_text())["state"] == "ready"
    assert EmbeddedBackend(tmp_path).count("mini") == 3
    assert backend.write("mini", mini_docs[3:5], vectors).indexed == 2


def test_searches_of_the_same_process_do_not_wait_for_a_bulk_load(tmp_path, mini_docs, use_embedder) -> None:
    import threading
    from concurrent.futures import ThreadPoolExecutor

    backend = _build(tmp_path, mini_docs[:3], use_embedder)
    vectors = use_embedder.embed_documents([d.text for d in mini_docs[3:6]])
    inside, release = threading.Event(), threading.Event()

    def load() -> None:
        with backend.bulk("mini") as write:
            write(mini_docs[3:6], vectors)
            inside.set()
            release.wait(60)

    loader = threading.Thread(target=load)
    loader.start()
    pool = ThreadPoolExecutor(1)
    try:
        assert inside.wait(60)
        assert pool.submit(backend.count, "mini").result(timeout=10) == 3  # the published state, at once
    finally:
        release.set()
        loader.join()
        pool.shutdown()
    assert backend.count("mini") == 6


def test_a_bulk_load_saves_the_vector_index_once(tmp_path, mini_docs, use_embedder, monkeypatch) -> None:
    import service.backends.embedded as embedded
    import service.indexing as indexing

    saved: list[int] = []
    real_write_faiss = embedded.EmbeddedIndex._write_faiss
    monkeypatch.setattr(embedded.EmbeddedIndex, "_write_faiss",
                        lambda self, index: (saved.append(index.ntotal), real_write_faiss(self, index))[1])
    monkeypatch.setattr(indexing, "WRITE_CHUNK", 4)  # many chunks
    backend = EmbeddedBackend(tmp_path)
    assert index_documents(backend, use_embedder, "mini", mini_docs, language="").ok
    assert saved == [0, len(mini_docs)]  # created empty, then one save for the whole load
