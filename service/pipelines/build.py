"""The one place that turns :class:`~service.config.Settings` into objects.

Nothing else in the package decides which engine, embedder or LLM is in use.

Example::

    runtime = Runtime(load_settings())
    runtime.pipeline("hybrid").run(SearchRequest("deposit not returned", index="default"))
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from service.backends.base import NativeFusion, SearchBackend
from service.config import Settings
from service.embeddings.base import Embedder
from service.embeddings.cache import CachedEmbedder
from service.errors import ConfigError, InvalidInput
from service.pipelines.base import Pipeline
from service.pipelines.hybrid import HybridPipeline


def build_backend(settings: Settings) -> SearchBackend:
    """The configured search backend (clients connect lazily, on first use)."""
    kind = settings.backend.kind
    if kind == "embedded":
        from service.backends.embedded import EmbeddedBackend

        return EmbeddedBackend(settings.index.root, hnsw_min_docs=settings.backend.hnsw_min_docs)
    if kind == "opensearch":
        from service.backends.opensearch import OpenSearchBackend

        return OpenSearchBackend.from_settings(settings.backend, settings.engine)
    if kind == "elasticsearch":
        from service.backends.elasticsearch import ElasticsearchBackend

        return ElasticsearchBackend.from_settings(settings.backend, settings.engine)
    raise InvalidInput(f"unknown backend {kind!r}")


def build_embedder(settings: Settings) -> CachedEmbedder:
    """The configured embedder, wrapped in the disk cache."""
    cfg = settings.embedder
    inner: Embedder
    if cfg.kind == "use":
        from service.embeddings.use import UseEmbedder

        inner = UseEmbedder(threads=cfg.threads)
    elif cfg.kind == "e5":
        from service.embeddings.e5 import E5Embedder

        inner = E5Embedder(threads=cfg.threads)
    elif cfg.kind == "sentence-transformers":
        from service.embeddings.sentence_transformer import SentenceTransformerEmbedder

        inner = SentenceTransformerEmbedder(cfg.model_path, batch_size=cfg.batch_size)
    elif cfg.kind == "openai":
        from service.embeddings.openai_embedder import OpenAIEmbedder

        inner = OpenAIEmbedder(cfg.url, cfg.model, api_key=cfg.api_key, batch_size=cfg.batch_size)
    else:
        raise InvalidInput(f"unknown embedder {cfg.kind!r}")
    return CachedEmbedder(inner, cfg.cache_dir, batch_size=cfg.batch_size)


PipelineFactory = Callable[["Runtime"], Pipeline]
_PIPELINES: dict[str, PipelineFactory] = {
    "bm25": lambda rt: HybridPipeline(rt.backend, rt.embedder, rt.settings.retrieval, mode="bm25"),
    "dense": lambda rt: HybridPipeline(rt.backend, rt.embedder, rt.settings.retrieval, mode="dense"),
    "hybrid": lambda rt: HybridPipeline(rt.backend, rt.embedder, rt.settings.retrieval, mode="hybrid",
                                        native=native_fusion(rt)),
}


def native_fusion(rt: Runtime) -> NativeFusion | None:
    """The backend, when ``engine.fusion = engine`` asks it to fuse hybrid searches itself."""
    if rt.settings.engine.fusion != "engine":
        return None
    backend = rt.backend
    if not isinstance(backend, NativeFusion):
        raise ConfigError(f"engine.fusion=engine: the {rt.settings.backend.kind} backend cannot fuse natively")
    return backend


def register_pipeline(name: str, factory: PipelineFactory) -> None:
    """Make a pipeline available by name (used by the agentic and routed modules)."""
    _PIPELINES[name] = factory


def pipeline_names() -> list[str]:
    _load_optional_pipelines()
    return sorted(_PIPELINES)


def _load_optional_pipelines() -> None:
    # Importing these modules registers their pipelines; they are heavier, so only on demand.
    for module in ("service.pipelines.agentic", "service.pipelines.routed"):
        try:
            __import__(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise


class Runtime:
    """Lazily built backend, embedder and pipelines for one set of settings (one per process)."""

    def __init__(self, settings: Settings, *, backend: SearchBackend | None = None,
                 embedder: CachedEmbedder | None = None) -> None:
        self.settings = settings
        self._backend = backend
        self._embedder = embedder
        self._pipelines: dict[str, Pipeline] = {}
        self._lock = threading.RLock()

    @property
    def backend(self) -> SearchBackend:
        with self._lock:
            if self._backend is None:
                self._backend = build_backend(self.settings)
            return self._backend

    @property
    def embedder(self) -> CachedEmbedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = build_embedder(self.settings)
            return self._embedder

    def forget_query_caches(self) -> None:
        """Forget cached query vectors, question terms and law predictions, so the next search pays
        for its own (benchmarks and calibration time each pipeline from cold query caches)."""
        from service.analysis.chain import forget_cached_terms
        from service.models import forget_recent_predictions

        self.embedder.clear_query_cache()
        forget_cached_terms()
        forget_recent_predictions()

    def pipeline(self, name: str) -> Pipeline:
        """The pipeline called ``name``.

        Raises:
            InvalidInput: for an unknown name (the message lists the known ones).
        """
        with self._lock:
            pipe = self._pipelines.get(name)
            if pipe is None:
                if name not in _PIPELINES:
                    _load_optional_pipelines()
                factory = _PIPELINES.get(name)
                if factory is None:
                    raise InvalidInput(f"unknown pipeline {name!r}; use one of: {', '.join(pipeline_names())}",
                                       code="unknown_pipeline")
                pipe = factory(self)
                self._pipelines[name] = pipe
            return pipe
