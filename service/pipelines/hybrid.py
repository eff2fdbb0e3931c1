"""Single-pass retrieval pipelines: BM25 only, dense only, and hybrid fusion of both.

The hybrid pipeline's :meth:`HybridPipeline.probe` (BM25 and kNN side by side) is also the first
step of the routed and agentic pipelines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.backends.base import NativeFusion, SearchBackend
from service.config import RetrievalSettings
from service.corpus.model import Filters, Hit
from service.embeddings.base import Embedder
from service.errors import ConfigError
from service.pipelines.base import IndexRetrieval, Probe, RetrievalOf, SearchRequest, SearchResponse
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

    def probe(self, query: str, index: str, *, k: int, filters: Filters | None, lang: str,
              watch: Stopwatch) -> Probe:
        """Run the retrievers this mode needs, with ``k`` hits each."""
        if self.mode == "bm25":
            with watch.stage("retrieve"):
                return Probe(self.backend.bm25(index, query, k=k, filters=filters, lang=lang), [], None)
        retrieval = self.retrieval(index)
        with watch.stage("embed"):
            vector = retrieval.embedder.embed_queries([query])[0]
        with watch.stage("retrieve"):
            if self.mode == "dense":
                return Probe([], self.backend.knn(index, vector, k=k, filters=filters), vector, retrieval.weights)
            bm25_hits, knn_hits = self.backend.probe(index, query, vector, k=k, filters=filters, lang=lang)
        return Probe(bm25_hits, knn_hits, vector, retrieval.weights)

    def fuse(self, probe: Probe) -> list[Hit]:
        """One ranking from the probe, by the configured fusion."""
        if self.mode == "bm25":
            return probe.bm25
        if self.mode == "dense":
            return probe.knn
        return fuse(probe.bm25, probe.knn, probe.weights.as_mapping(), self.settings)

    def run(self, request: SearchRequest) -> SearchResponse:
        request = request.validated(self.settings.max_query_chars)
        watch = Stopwatch()
        depth = max(request.k, self.settings.depth)
        if self.native is not None:
            fused = self._run_native(request, depth, watch)
            if fused is not None:
                return fused
        probe = self.probe(request.query, request.index, k=depth, filters=request.filters,
                           lang=request.lang, watch=watch)
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
        return SearchResponse(hits=hits, trace=trace)

    def _run_native(self, request: SearchRequest, depth: int, watch: Stopwatch) -> SearchResponse | None:
        """Hybrid search fused by the backend (``depth`` hits from each retriever, as in :meth:`probe`);
        None when the engine cannot apply this index's fusion (RRF with unequal weights: the client fuses)."""
        assert self.native is not None
        retrieval = self.retrieval(request.index)
        weights = retrieval.weights
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
