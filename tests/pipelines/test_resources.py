"""Per-index resources: the graph is built once per index and document count; term search fallback."""

from __future__ import annotations

import pytest

from service.agents.vocabulary import ProbeVocabulary, Vocabulary
from service.backends.embedded import EmbeddedBackend
from service.indexing import index_documents
from service.models import TrainedModels
from service.pipelines.resources import IndexResources, term_search

pytestmark = pytest.mark.unit


class NoTermsBackend(EmbeddedBackend):
    """The embedded backend without ``bm25_terms``, like an engine that lacks it."""

    def __getattribute__(self, name: str):  # type: ignore[no-untyped-def]
        if name == "bm25_terms":
            raise AttributeError(name)
        return super().__getattribute__(name)


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


def test_term_search_falls_back_to_a_text_query(tmp_path, mini_docs, use_embedder) -> None:
    backend = NoTermsBackend(tmp_path)
    assert index_documents(backend, use_embedder, "t", mini_docs, language="").ok
    hits = term_search(backend, "t")({"kaution": 2.0, "vermiet": 1.0}, k=3)
    assert hits and hits[0].doc_id in {"SR220_Art257e_de", "BGE_142_III_100", "4A_32/2018"}
    native = term_search(EmbeddedBackend(tmp_path), "t")({"kaution": 1.0}, k=3)
    assert native
