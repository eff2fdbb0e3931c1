"""Per-index resources of the pipelines, built once per process: the corpus graph, the vocabulary
check and the law names (every name of each act, for law filters).

The graph comes from a scan of the index (about 3 s for STARD), so every corpus gets citation
expansion and article features without training. The vocabulary is the trained one when a model
folder is loaded (it must come from the same corpus), else a check that asks the index.

Example::

    resources = IndexResources.get(backend, "stard", models)
    resources.graph.neighbours("13498"), resources.vocabulary.known("押金")
    request = widen_law_filter(backend, request)   # law=or is OR, and also searches the French and Italian versions
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from service.agents.vocabulary import ProbeVocabulary, VocabularyCheck
from service.backends.base import SearchBackend
from service.corpus.graph import CorpusGraph
from service.corpus.law_names import LawNames, known_law_names
from service.corpus.model import Filters, LegalDoc
from service.indexing import citation_links_current
from service.models import TrainedModels
from service.pipelines.base import SearchRequest

log = logging.getLogger(__name__)


@dataclass
class IndexResources:
    """The corpus graph, the vocabulary check, the languages and the law names of one index."""

    graph: CorpusGraph
    vocabulary: VocabularyCheck
    languages: tuple[str, ...]
    documents: int
    law_names: LawNames

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
                names: list[tuple[str, str, str, str]] = []
                graph = CorpusGraph.build(doc for doc in _noting_laws(backend.scan(index), names)
                                          if doc.work == doc.id)
                try:
                    languages: Sequence[str] = backend.stats(index).languages
                except Exception:  # stats are a nicety; language detection then considers every language
                    log.debug("no stats for %s", index, exc_info=True)
                    languages = ()
                vocabulary = ProbeVocabulary(lambda weights: backend.bm25_terms(index, weights, k=1))
                cached = IndexResources(graph, vocabulary, tuple(languages), count, LawNames.from_rows(names))
                _CACHE[key] = cached
                if key not in _WARNED_OUTDATED and not citation_links_current(backend.metadata(index)):
                    _WARNED_OUTDATED.add(key)
                    log.warning("index %r holds citation links read by another version of lexsearch; rebuild "
                                "it (lexsearch index without --update) to link its documents by this one's rules",
                                index)
        if models is not None and models.vocabulary is not None:
            return replace(cached, vocabulary=models.vocabulary)
        return cached


def widen_law_filter(backend: SearchBackend, request: SearchRequest) -> SearchRequest:
    """``request`` with its law filter meaning what a user means by it; unchanged without one.

    - A value that is no law name of the index but equals exactly one ignoring case is that name
      (``law=or`` → ``OR``).
    - On an index whose articles have versions in other languages (``max_versions`` in its metadata;
      not attached indices), the filter is widened to every name of the acts it names (``law=OR``
      also matches the French and Italian versions, named ``CO``). The first such request of a
      process on an index builds its resources (one scan).
    """
    if request.filters is None or not any(name == "law" for name, _ in request.filters.terms):
        return request
    filters = _known_law_names(backend, request.index, request.filters)
    if filters is not request.filters:
        request = replace(request, filters=filters)
    if int(backend.metadata(request.index).get("max_versions") or 1) <= 1:
        return request
    names = IndexResources.get(backend, request.index, None).law_names
    return replace(request, filters=names.widen(request.filters))


def _known_law_names(backend: SearchBackend, index: str, filters: Filters) -> Filters:
    """``filters`` with law values written in another case than the index's law names corrected
    (``filters`` itself when none is). The index's names are read once per process, and again when a
    value is not among them (it may be new)."""
    key = (id(backend), index)
    values = [v for name, vs in filters.terms if name == "law" for v in vs]
    known = _LAW_NAMES.get(key)
    if known is None or not known.issuperset(values):
        known = _LAW_NAMES[key] = frozenset(backend.law_names(index))
    if known.issuperset(values):
        return filters  # every value is a law name: the usual case, nothing to correct
    terms = tuple((name, known_law_names(vs, known) if name == "law" else vs) for name, vs in filters.terms)
    return filters if terms == filters.terms else replace(filters, terms=terms)


def _noting_laws(docs: Iterator[LegalDoc], names: list[tuple[str, str, str, str]]) -> Iterator[LegalDoc]:
    """``docs``, noting each one's law, language, work and id in ``names`` on the way."""
    for doc in docs:
        names.append((doc.law, doc.lang, doc.work, doc.id))
        yield doc


_LOCK = threading.Lock()
_CACHE: dict[tuple[int, str], IndexResources] = {}
_WARNED_OUTDATED: set[tuple[int, str]] = set()
_LAW_NAMES: dict[tuple[int, str], frozenset[str]] = {}
"""The law names of each index (:func:`_known_law_names`)."""
