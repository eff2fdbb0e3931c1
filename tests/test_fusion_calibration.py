"""Label-free fusion weights from known-item passages of the corpus."""

from __future__ import annotations

import random

import pytest

from service.backends.embedded import EmbeddedBackend
from service.config import load_settings
from service.corpus.model import DocKind, Filters
from service.embeddings.cache import CachedEmbedder
from service.embeddings.openai_embedder import OpenAIEmbedder
from service.fusion_calibration import (
    GROUPS_KEY,
    METHOD,
    calibrate_fusion,
    ensure_fusion_quietly,
    ensure_fusion_weights,
    ensure_group_fusion_weights,
    passage_queries,
)
from service.indexing import index_documents
from service.retrieval.weights import FUSION_KEY

pytestmark = pytest.mark.unit

RETRIEVAL = load_settings(environ={}).retrieval


def test_passages_are_windows_of_one_document(mini_docs, trilingual_docs) -> None:
    queries = passage_queries(mini_docs, default_lang="", count=50, rng=random.Random(3))
    assert queries == passage_queries(mini_docs, default_lang="", count=50, rng=random.Random(3))
    by_id = {d.id: d for d in mini_docs}
    for query in queries:
        doc = by_id[query.known_item]
        if doc.lang == "zh":
            assert " " not in query.text and set(query.text) <= set(doc.text)  # punctuation dropped
        else:
            assert 12 <= len(query.text.split()) <= 40
    versions = passage_queries(trilingual_docs, default_lang="de", count=50, rng=random.Random(3))
    works = {d.work for d in trilingual_docs}
    assert {q.known_item for q in versions} <= works  # search returns a work once, by its id
    assert any(q.lang != "de" for q in versions)
    with pytest.raises(ValueError, match="min_words"):
        passage_queries(mini_docs, default_lang="", count=1, rng=random.Random(), min_words=5, max_words=4)


def test_a_reading_embedder_keeps_the_split_near_even(mini_embedded, use_embedder) -> None:
    backend, name = mini_embedded
    fit = calibrate_fusion(backend, use_embedder, name, RETRIEVAL, samples=120)
    known = fit.to_dict()["known_items"]
    assert fit.method == METHOD and fit.questions == 120 and fit.fusion == "linear-zscore"
    assert fit.bm25 + fit.knn == pytest.approx(1.0)
    assert fit.bm25 == pytest.approx(known["bm25"]["mrr@10"] / (known["bm25"]["mrr@10"] + known["knn"]["mrr@10"]),
                                     abs=1e-3)
    assert 0.4 < fit.bm25 < 0.65
    again = calibrate_fusion(backend, use_embedder, name, RETRIEVAL, samples=120).to_dict()
    assert {k: v for k, v in again.items() if k != "created"} == {
        k: v for k, v in fit.to_dict().items() if k != "created"}  # seeded: the same weights every time


def test_a_knn_side_that_reads_nothing_moves_the_weight_to_bm25(tmp_path, mini_docs, openai_server) -> None:
    """Hash-based pseudo-embeddings (the test server's) place texts at random: kNN finds no passage."""
    noise = CachedEmbedder(OpenAIEmbedder(openai_server.base_url, "hash", batch_size=64, max_retries=0),
                           tmp_path / "cache")
    backend = EmbeddedBackend(tmp_path / "indices")
    index_documents(backend, noise, "mini", mini_docs, language="")
    weights = ensure_fusion_weights(backend, noise, "mini", RETRIEVAL)
    assert weights.bm25 > 0.9 and weights.source == "index"
    stored = backend.metadata("mini")[FUSION_KEY]
    assert stored["method"] == METHOD and stored["bm25"] == pytest.approx(weights.bm25, abs=1e-4)
    assert stored["known_items"]["knn"]["mrr@10"] < 0.1 < stored["known_items"]["bm25"]["mrr@10"]
    calls = len(openai_server.embedding_requests)
    assert ensure_fusion_weights(backend, noise, "mini", RETRIEVAL).bm25 == weights.bm25  # stored: no new search
    assert len(openai_server.embedding_requests) == calls


def test_a_corpus_without_passages_keeps_the_even_split(tmp_path, mini_docs, use_embedder) -> None:
    backend = EmbeddedBackend(tmp_path / "indices")
    short = [d for d in mini_docs if len(d.text.split()) < 12 and d.lang != "zh"][:5]
    index_documents(backend, use_embedder, "tiny", short, language="")
    assert "fuses 0.5/0.5" in ensure_fusion_quietly(backend, use_embedder, "tiny", RETRIEVAL)
    assert FUSION_KEY not in backend.metadata("tiny")


def test_each_group_of_statutes_and_decisions_gets_weights_of_its_own(tmp_path, mini_docs, use_embedder) -> None:
    backend = EmbeddedBackend(tmp_path / "indices")
    index_documents(backend, use_embedder, "mini", mini_docs, language="")
    groups = ensure_group_fusion_weights(backend, use_embedder, "mini", RETRIEVAL)
    assert set(groups) == {"statutes", "decisions"} and {w.source for w in groups.values()} == {"index"}
    stored = backend.metadata("mini")[GROUPS_KEY]
    assert stored["statutes"]["method"] == METHOD
    decisions = calibrate_fusion(backend, use_embedder, "mini", RETRIEVAL,
                                 filters=Filters.of(kind=["leading_decision", "decision"]))
    assert stored["decisions"]["bm25"] == pytest.approx(decisions.bm25, abs=1e-4) == groups["decisions"].bm25
    whole = calibrate_fusion(backend, use_embedder, "mini", RETRIEVAL)
    assert whole.to_dict()["known_items"] != stored["decisions"]["known_items"]  # passages of the decisions alone
    backend.update_metadata("mini", **{GROUPS_KEY: {**stored, "decisions": {**stored["decisions"], "bm25": 0.9,
                                                                             "knn": 0.1}}})
    again = ensure_group_fusion_weights(backend, use_embedder, "mini", RETRIEVAL)
    assert again["decisions"].bm25 == 0.9 and again["statutes"] == groups["statutes"]  # stored: read, not redone
    assert "; statutes: bm25" in ensure_fusion_quietly(backend, use_embedder, "mini", RETRIEVAL)


def test_an_index_of_one_group_has_no_group_weights(tmp_path, mini_docs, use_embedder) -> None:
    backend = EmbeddedBackend(tmp_path / "indices")
    index_documents(backend, use_embedder, "statutes", [d for d in mini_docs if d.kind == DocKind.STATUTE],
                    language="")
    assert ensure_group_fusion_weights(backend, use_embedder, "statutes", RETRIEVAL) == {}
    assert GROUPS_KEY not in backend.metadata("statutes")
