"""Single-pass retrieval pipelines: BM25 only, dense only, and hybrid fusion of both.

The hybrid pipeline's :meth:`HybridPipeline.probe` (BM25 and kNN side by side) is also the first
step of the routed and agentic pipelines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.backends.base import SearchBackend
from service.config import RetrievalSettings
from service.corpus.model import Filters, Hit
from service.embeddings.base import Embedder
from service.pipelines.base import Probe, SearchRequest, SearchResponse
from service.retrieval import fusion
from service.tracing import Stopwatch

if TYPE_CHECKING:
    from service.pipelines.build import Runtime


class HybridPipeline:
    """BM25 and kNN over the same index, fused client-side (RRF or linear), identical on every backend.

    ``mode`` is ``bm25``, ``dense`` or ``hybrid``.

    Example::

        pipe = HybridPipeline(backend, embedder, RetrievalSettings(), mode="hybrid")
        pipe.run(SearchRequest("Kaution zurückfordern", index="swiss", k=10)).hits
    """

    def __init__(self, backend: SearchBackend, embedder: Embedder, settings: RetrievalSettings,
                 *, mode: str = "hybrid") -> None:
        if mode not in ("bm25", "dense", "hybrid"):
            raise ValueError(f"unknown retrieval mode {mode!r}")
        self.backend = backend
        self.embedder = embedder
        self.settings = settings
        self.mode = mode
        self.name = mode

    @classmethod
    def from_runtime(cls, runtime: Runtime, *, name: str, mode: str) -> HybridPipeline:
        """The pipeline of :data:`service.plugins.PIPELINES` entry ``name``, on the runtime's backend and embedder."""
        return cls(runtime.backend, runtime.embedder, runtime.settings.retrieval, mode=mode)

    def probe(self, query: str, index: str, *, k: int, filters: Filters | None, lang: str,
              watch: Stopwatch) -> Probe:
        """Run the retrievers this mode needs, with ``k`` hits each."""
        vector = None
        if self.mode != "bm25":
            with watch.stage("embed"):
                vector = self.embedder.embed_queries([query])[0]
        with watch.stage("retrieve"):
            if self.mode == "bm25":
                return Probe(self.backend.bm25(index, query, k=k, filters=filters, lang=lang), [], None)
            if self.mode == "dense":
                return Probe([], self.backend.knn(index, vector, k=k, filters=filters), vector)
            bm25_hits, knn_hits = self.backend.probe(index, query, vector, k=k, filters=filters, lang=lang)
        return Probe(bm25_hits, knn_hits, vector)

    def fuse(self, probe: Probe) -> list[Hit]:
        """One ranking from the probe, by the configured fusion."""
        if self.mode == "bm25":
            return probe.bm25
        if self.mode == "dense":
            return probe.knn
        lists = {"bm25": probe.bm25, "knn": probe.knn}
        weights = {"bm25": self.settings.bm25_weight, "knn": self.settings.knn_weight}
        if self.settings.fusion == "rrf":
            return fusion.rrf(lists, k=self.settings.rrf_k, weights=weights)
        return fusion.linear(lists, weights=weights, normalization=self.settings.normalization)

    def run(self, request: SearchRequest) -> SearchResponse:
        request = request.validated(self.settings.max_query_chars)
        watch = Stopwatch()
        depth = max(request.k, self.settings.depth)
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
        return SearchResponse(hits=hits, trace=trace)
