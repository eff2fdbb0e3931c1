"""Single-pass retrieval pipelines: BM25 only, dense only, and hybrid fusion of both.

The hybrid pipeline's :meth:`HybridPipeline.probe` (BM25 and kNN side by side) is also the first
step of the routed and agentic pipelines.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from service.backends.base import NativeFusion, SearchBackend
from service.config import RetrievalSettings
from service.corpus.model import Filters, Hit
from service.embeddings.base import Embedder
from service.pipelines.base import SearchRequest, SearchResponse
from service.retrieval import fusion
from service.tracing import Stopwatch


@dataclass
class Probe:
    """The result of one side-by-side BM25 + kNN call."""

    bm25: list[Hit]
    knn: list[Hit]
    vector: np.ndarray | None


class HybridPipeline:
    """BM25 and kNN over the same index, fused client-side (RRF or linear), identical on every backend.

    ``mode`` is ``bm25``, ``dense`` or ``hybrid``. With ``native`` (``engine.fusion = engine``), the
    ``hybrid`` mode lets that backend fuse the two lists in one request instead; :meth:`probe` (the
    separate lists, used by the routed and agentic pipelines) is the same either way.

    Example::

        pipe = HybridPipeline(backend, embedder, RetrievalSettings(), mode="hybrid")
        pipe.run(SearchRequest("Kaution zurückfordern", index="swiss", k=10)).hits
    """

    def __init__(self, backend: SearchBackend, embedder: Embedder, settings: RetrievalSettings,
                 *, mode: str = "hybrid", native: NativeFusion | None = None) -> None:
        if mode not in ("bm25", "dense", "hybrid"):
            raise ValueError(f"unknown retrieval mode {mode!r}")
        self.backend = backend
        self.embedder = embedder
        self.settings = settings
        self.mode = mode
        self.name = mode
        self.native = native if mode == "hybrid" else None

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
        if self.native is not None:
            return self._run_native(request, depth, watch)
        probe = self.probe(request.query, request.index, k=depth, filters=request.filters,
                           lang=request.lang, watch=watch)
        with watch.stage("fuse"):
            hits = self.fuse(probe)[: request.k]
        trace = {"pipeline": self.name, "timings_ms": watch.to_dict(),
                 "candidates": {"bm25": len(probe.bm25), "knn": len(probe.knn)}}
        return SearchResponse(hits=hits, trace=trace)

    def _run_native(self, request: SearchRequest, depth: int, watch: Stopwatch) -> SearchResponse:
        """Hybrid search fused by the backend (``depth`` hits from each retriever, as in :meth:`probe`)."""
        assert self.native is not None
        with watch.stage("embed"):
            vector = self.embedder.embed_queries([request.query])[0]
        with watch.stage("retrieve"):
            hits = self.native.hybrid(request.index, request.query, vector, k=depth, fusion=self.settings,
                                      filters=request.filters, lang=request.lang)[: request.k]
        trace = {"pipeline": self.name, "timings_ms": watch.to_dict(), "fusion": "engine",
                 "candidates": {"fused": len(hits)}}
        return SearchResponse(hits=hits, trace=trace)
