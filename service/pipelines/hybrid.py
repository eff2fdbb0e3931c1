"""Single-pass retrieval pipelines: BM25 only, dense only, and hybrid fusion of both.

The hybrid pipeline's :meth:`HybridPipeline.probe` (BM25 and kNN side by side) is also the first
step of the routed and agentic pipelines. A question longer than ``retrieval.long_query_chars`` is
read as passages and its question proper (:mod:`service.retrieval.long_query`): BM25 gets its
weighted key terms, kNN the combined passage vector, which the hybrid pipeline's own answers move
toward BM25's first hits (:mod:`service.retrieval.feedback`; the probe that the routed and agentic
pipelines start from keeps it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from service.analysis.language import detect_language
from service.backends.base import NativeFusion, SearchBackend
from service.config import RetrievalSettings
from service.corpus.model import Filters, Hit
from service.corpus.views import section_key
from service.embeddings.base import Embedder
from service.errors import ConfigError
from service.pipelines.base import IndexRetrieval, Probe, RetrievalOf, SearchRequest, SearchResponse
from service.pipelines.resources import widen_law_filter
from service.retrieval.feedback import feedback_vector
from service.retrieval.long_query import LongQuery, bm25_idf, read_long_query
from service.retrieval.weights import DEFAULT_WEIGHTS, FusionWeights, fuse
from service.tracing import Stopwatch

if TYPE_CHECKING:
    from service.pipelines.build import Runtime


def retrieval_of(retrieval: RetrievalOf | Embedder, settings: RetrievalSettings) -> RetrievalOf:
    """``retrieval`` itself, or for one embedder: that embedder on every index, with the weights of
    ``settings`` (or 0.5/0.5)."""
    if not isinstance(retrieval, Embedder):
        return retrieval
    fixed = IndexRetrieval(retrieval, FusionWeights.from_settings(settings) or DEFAULT_WEIGHTS)
    return lambda _index: fixed


class HybridPipeline:
    """BM25 and kNN over the same index, fused client-side (RRF or linear), identical on every backend.

    ``mode`` is ``bm25``, ``dense`` or ``hybrid``. ``retrieval`` gives each index's embedder and fusion
    weights (:func:`retrieval_of`: or one embedder for every index). With ``native``
    (``engine.fusion = engine``), the ``hybrid`` mode lets that backend fuse the two lists in one
    request instead; :meth:`probe` (the separate lists, used by the routed and agentic pipelines) is
    the same either way.

    Example::

        pipe = HybridPipeline(backend, runtime.retrieval, RetrievalSettings(), mode="hybrid")
        pipe.run(SearchRequest("Kaution zurückfordern", index="swiss", k=10)).hits
    """

    def __init__(self, backend: SearchBackend, retrieval: RetrievalOf | Embedder, settings: RetrievalSettings,
                 *, mode: str = "hybrid", native: NativeFusion | None = None) -> None:
        if mode not in ("bm25", "dense", "hybrid"):
            raise ValueError(f"unknown retrieval mode {mode!r}")
        self.backend = backend
        self.retrieval = retrieval_of(retrieval, settings)
        self.settings = settings
        self.mode = mode
        self.name = mode
        self.native = native if mode == "hybrid" else None

    @classmethod
    def from_runtime(cls, runtime: Runtime, *, name: str, mode: str) -> HybridPipeline:
        """The pipeline of :data:`service.plugins.PIPELINES` entry ``name``, on the runtime's backend and the
        embedders and fusion weights of its indices."""
        return cls(runtime.backend, runtime.retrieval, runtime.settings.retrieval, mode=mode,
                   native=native_fusion(runtime) if mode == "hybrid" else None)

    def long_query(self, query: str) -> LongQuery | None:
        """The question read as passages and question proper when it is long, else ``None``."""
        limit = self.settings.long_query_chars
        return read_long_query(query) if limit and len(query) > limit else None

    def query_vector(self, query: str, index: str) -> np.ndarray:
        """The question's embedding as the probe makes it for ``index`` (long questions: the passage mean)."""
        embedder = self.retrieval(index).embedder
        long = self.long_query(query)
        return long.vector(embedder) if long is not None else embedder.embed_queries([query])[0]

    def probe(self, query: str, index: str, *, k: int, filters: Filters | None, lang: str,
              watch: Stopwatch, feedback: bool = False) -> Probe:
        """Run the retrievers this mode needs, with ``k`` hits each. With ``feedback`` (and
        :meth:`feeds_back`), a long question's kNN side searches with its passage vector moved toward
        BM25's first hits (:meth:`knn_vector`)."""
        long = self.long_query(query)
        if long is not None:
            return self._probe_long(long, index, k=k, filters=filters, lang=lang, watch=watch,
                                    feedback=feedback and self.feeds_back())
        if self.mode == "bm25":
            with watch.stage("retrieve"):
                return Probe(self.backend.bm25(index, query, k=k, filters=filters, lang=lang), [], None)
        retrieval = self.retrieval(index)
        with watch.stage("embed"):
            vector = retrieval.embedder.embed_queries([query])[0]
        with watch.stage("retrieve"):
            if self.mode == "dense":
                return Probe([], self.backend.knn(index, vector, k=k, filters=filters), vector,
                             retrieval.weights_for(filters))
            bm25_hits, knn_hits = self.backend.probe(index, query, vector, k=k, filters=filters, lang=lang)
            sections = self.sections(index, retrieval, bm25_hits, knn_hits)
        return Probe(bm25_hits, knn_hits, vector, retrieval.weights_for(filters), sections=sections,
                     depth=k)

    def feeds_back(self) -> bool:
        """Whether this pipeline can move its kNN query toward BM25's first hits: hybrid mode, with
        ``retrieval.knn_feedback_docs`` and ``knn_feedback_weight`` above 0."""
        cfg = self.settings
        return self.mode == "hybrid" and cfg.knn_feedback_docs > 0 and cfg.knn_feedback_weight > 0

    def knn_vector(self, index: str, vector: np.ndarray, bm25_hits: list[Hit]) -> tuple[np.ndarray, int]:
        """``vector`` moved toward the stored vectors of the first ``retrieval.knn_feedback_docs`` BM25
        hits (:func:`~service.retrieval.feedback.feedback_vector`), and how many hits moved it."""
        cfg = self.settings
        ids = [h.doc_id for h in bm25_hits[: cfg.knn_feedback_docs]]
        stored = self.backend.vectors(index, ids)
        rows = [stored[doc_id] for doc_id in ids if doc_id in stored]
        return feedback_vector(vector, rows, cfg.knn_feedback_weight), len(rows)

    def _probe_long(self, long: LongQuery, index: str, *, k: int, filters: Filters | None, lang: str,
                    watch: Stopwatch, feedback: bool) -> Probe:
        """The probe of a long question: key-term BM25 and the passage-mean vector."""
        vector = None
        retrieval = None
        if self.mode != "bm25":
            retrieval = self.retrieval(index)
            with watch.stage("embed"):
                vector = long.vector(retrieval.embedder)
        terms = None
        bm25_hits: list[Hit] = []
        knn_hits: list[Hit] = []
        sections = None
        used = 0
        with watch.stage("retrieve"):
            if self.mode != "dense":
                terms = self.long_weights(long, index, lang)
                bm25_hits = self.backend.bm25_terms(index, terms, k=k, filters=filters)
            if vector is not None:
                knn_query = vector
                if feedback:
                    knn_query, used = self.knn_vector(index, vector, bm25_hits)
                knn_hits = self.backend.knn(index, knn_query, k=k, filters=filters)
            if retrieval is not None:
                sections = self.sections(index, retrieval, bm25_hits, knn_hits)
        weights = retrieval.weights_for(filters) if retrieval is not None else DEFAULT_WEIGHTS
        return Probe(bm25_hits, knn_hits, vector, weights, terms, long, sections, used, depth=k)

    def sections(self, index: str, retrieval: IndexRetrieval, bm25: list[Hit], knn: list[Hit]
                 ) -> dict[str, str] | None:
        """The heading section of each candidate, when this pipeline's fusion shares kNN evidence within
        sections (hybrid, linear fusion, ``retrieval.section_share`` > 0) and the index has headings;
        else ``None``. Costs one fetch of the candidates (about 3 ms for 160 on the embedded engine)."""
        cfg = self.settings
        if self.mode != "hybrid" or cfg.fusion != "linear" or cfg.section_share <= 0 or not retrieval.sections:
            return None
        if not bm25 or not knn:
            return None
        ids = list(dict.fromkeys([h.doc_id for h in bm25] + [h.doc_id for h in knn]))
        found = {doc_id: section_key(doc) for doc_id, doc in self.backend.fetch(index, ids).items()}
        return {doc_id: key for doc_id, key in found.items() if key is not None}

    def bm25(self, query: str, index: str, *, k: int, filters: Filters | None, lang: str) -> list[Hit]:
        """BM25 of the question as the probe runs it (long questions: their weighted key terms)."""
        long = self.long_query(query)
        if long is None:
            return self.backend.bm25(index, query, k=k, filters=filters, lang=lang)
        return self.backend.bm25_terms(index, self.long_weights(long, index, lang), k=k, filters=filters)

    def long_weights(self, long: LongQuery, index: str, lang: str) -> dict[str, float]:
        """BM25 weights of a long question, capped by tf-idf where the backend knows document frequencies."""
        def idf(terms: list[str]) -> dict[str, float]:
            return bm25_idf(self.backend.doc_freqs(index, terms), self.backend.count(index))

        return long.term_weights(lang or detect_language(long.text), idf, self.backend.query_languages(index))

    def fuse(self, probe: Probe) -> list[Hit]:
        """One ranking from the probe, by the configured fusion."""
        if self.mode == "bm25":
            return probe.bm25
        if self.mode == "dense":
            return probe.knn
        return fuse(probe.bm25, probe.knn, probe.weights.as_mapping(), self.settings, probe.sections,
                    depth=probe.depth)

    def filtered(self, index: str, query: str, vector: np.ndarray | None, *, k: int, filters: Filters | None,
                 lang: str, weights: FusionWeights, terms: dict[str, float] | None = None) -> list[Hit]:
        """BM25 and kNN of ``query`` (and its ``vector``) under ``filters``, fused with ``weights``, top
        ``k``: the agentic pipeline's extra passes (prefiltered, per issue); long questions search by
        their weighted key terms, as the probe does (``terms``: those the probe already worked out)."""
        if terms is not None:
            bm25 = self.backend.bm25_terms(index, terms, k=k, filters=filters)
        else:
            bm25 = self.bm25(query, index, k=k, filters=filters, lang=lang)
        knn = self.backend.knn(index, vector, k=k, filters=filters) if vector is not None else []
        sections = self.sections(index, self.retrieval(index), bm25, knn) if knn else None
        return self.fuse(Probe(bm25, knn, None, weights, sections=sections, depth=k))[:k]

    def run(self, request: SearchRequest) -> SearchResponse:
        request = widen_law_filter(self.backend, request.validated(self.settings.max_query_chars))
        watch = Stopwatch()
        depth = max(request.k, self.settings.depth)
        if self.native is not None and self.long_query(request.query) is None:
            # long questions are read as weighted key terms and a passage mean: the engine's query cannot
            fused = self._run_native(request, depth, watch)
            if fused is not None:
                return fused
        probe = self.probe(request.query, request.index, k=depth, filters=request.filters,
                           lang=request.lang, watch=watch, feedback=True)
        return self._answer(request, probe, watch)

    def run_with_probe(self, request: SearchRequest, probe: Probe) -> SearchResponse:
        """The fusion of ``probe``, without retrieving again (routing tier 0)."""
        return self._answer(request.validated(self.settings.max_query_chars), probe, Stopwatch())

    def _answer(self, request: SearchRequest, probe: Probe, watch: Stopwatch) -> SearchResponse:
        with watch.stage("fuse"):
            hits = self.fuse(probe)[: request.k]
        trace = {"pipeline": self.name, "timings_ms": watch.to_dict(),
                 "candidates": {"bm25": len(probe.bm25), "knn": len(probe.knn)}}
        if self.mode == "hybrid":
            trace["fusion_weights"] = probe.weights.to_dict()
        if probe.sections is not None:
            trace["fusion_sections"] = {"share": self.settings.section_share, "candidates": len(probe.sections)}
        if probe.knn_feedback:
            trace["knn_feedback"] = {"docs": probe.knn_feedback, "weight": self.settings.knn_feedback_weight}
        if probe.long_query is not None:
            trace["long_query"] = probe.long_query.to_trace()
        return SearchResponse(hits=hits, trace=trace)

    def _run_native(self, request: SearchRequest, depth: int, watch: Stopwatch) -> SearchResponse | None:
        """Hybrid search fused by the backend (``depth`` hits from each retriever, as in :meth:`probe`);
        None when the engine cannot apply this index's fusion (RRF with unequal weights: the client fuses)."""
        assert self.native is not None
        retrieval = self.retrieval(request.index)
        weights = retrieval.weights_for(request.filters)
        if self.settings.fusion == "rrf" and weights.bm25 != weights.knn:
            return None  # OpenSearch 2.19's RRF takes no weights
        with watch.stage("embed"):
            vector = retrieval.embedder.embed_queries([request.query])[0]
        with watch.stage("retrieve"):
            hits = self.native.hybrid(request.index, request.query, vector, k=depth, fusion=self.settings,
                                      weights=weights.as_mapping(), filters=request.filters,
                                      lang=request.lang)[: request.k]
        trace = {"pipeline": self.name, "timings_ms": watch.to_dict(), "fusion": "engine",
                 "fusion_weights": weights.to_dict(), "candidates": {"fused": len(hits)}}
        return SearchResponse(hits=hits, trace=trace)


def native_fusion(runtime: Runtime) -> NativeFusion | None:
    """The runtime's backend, when ``engine.fusion = engine`` asks it to fuse hybrid searches itself.

    Raises:
        ConfigError: when that backend cannot (the settings check refuses it earlier).
    """
    if runtime.settings.engine.fusion != "engine":
        return None
    backend = runtime.backend
    if not isinstance(backend, NativeFusion):
        raise ConfigError(f"engine.fusion=engine: the {runtime.settings.backend.kind} backend cannot fuse natively")
    return backend
