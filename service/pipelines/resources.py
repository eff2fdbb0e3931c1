"""Per-index resources of the agentic pipelines, built once per process: the corpus graph and the
vocabulary check.

The graph comes from a scan of the index (about 3 s for STARD), so every corpus gets citation
expansion and article features without training. The vocabulary is the trained one when a model
folder is loaded (it must come from the same corpus), else a check that asks the index.

Example::

    resources = IndexResources.get(backend, "stard", models)
    resources.graph.neighbours("13498"), resources.vocabulary.known("押金")
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from service.agents.vocabulary import ProbeVocabulary, VocabularyCheck
from service.backends.base import SearchBackend
from service.corpus.graph import CorpusGraph
from service.models import TrainedModels

log = logging.getLogger(__name__)


@dataclass
class IndexResources:
    """The corpus graph, the vocabulary check and the languages of one index."""

    graph: CorpusGraph
    vocabulary: VocabularyCheck
    languages: tuple[str, ...]
    documents: int

    @staticmethod
    def get(backend: SearchBackend, index: str, models: TrainedModels | None) -> IndexResources:
        """The resources of ``index``; the graph is rebuilt when the index's document count changes."""
        count = backend.count(index)
        key = (id(backend), index)
        with _LOCK:  # one build per index, even when several requests arrive at once
            cached = _CACHE.get(key)
            if cached is None or cached.documents != count:
                # One node per work: the other versions of an article (its translations) are not
                # articles of their own, and search names every hit by its work.
                graph = CorpusGraph.build(doc for doc in backend.scan(index) if doc.work == doc.id)
                try:
                    languages: Sequence[str] = backend.stats(index).languages
                except Exception:  # stats are a nicety; language detection then considers every language
                    log.debug("no stats for %s", index, exc_info=True)
                    languages = ()
                vocabulary = ProbeVocabulary(lambda weights: backend.bm25_terms(index, weights, k=1))
                cached = IndexResources(graph, vocabulary, tuple(languages), count)
                _CACHE[key] = cached
        if models is not None and models.vocabulary is not None:
            return IndexResources(cached.graph, models.vocabulary, cached.languages, cached.documents)
        return cached


_LOCK = threading.Lock()
_CACHE: dict[tuple[int, str], IndexResources] = {}
