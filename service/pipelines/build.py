"""The one place that turns :class:`~service.config.Settings` into objects.

Nothing else in the package decides which engine, embedder or LLM is in use.

Example::

    runtime = Runtime(load_settings())
    runtime.pipeline("hybrid").run(SearchRequest("deposit not returned", index="default"))
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from service.backends.base import SearchBackend
from service.config import EmbedderSettings, Settings
from service.embeddings.base import Embedder
from service.embeddings.cache import CachedEmbedder
from service.errors import IndexCorrupt, InvalidInput
from service.pipelines.base import Pipeline
from service.pipelines.hybrid import HybridPipeline, IndexRetrieval
from service.retrieval.weights import DEFAULT_WEIGHTS, FusionWeights


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


def build_embedder(settings: Settings, language: str = "") -> CachedEmbedder:
    """The embedder configured for a corpus in ``language`` ('' = the default one), wrapped in the disk cache."""
    cfg = settings.embedder.for_language(language)
    inner: Embedder
    if cfg.kind == "use":
        from service.embeddings.use import UseEmbedder

        inner = UseEmbedder(threads=cfg.threads)
    elif cfg.kind == "e5":
        from service.embeddings.e5 import E5Embedder

        inner = E5Embedder(threads=cfg.threads)
    elif cfg.kind == "onnx":
        from service.embeddings.onnx import OnnxEmbedder

        inner = OnnxEmbedder(cfg.model, jar=cfg.model_path, repository=cfg.maven_repo, max_tokens=cfg.max_tokens,
                             threads=cfg.threads)
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
    "bm25": lambda rt: HybridPipeline(rt.backend, rt.retrieval, rt.settings.retrieval, mode="bm25"),
    "dense": lambda rt: HybridPipeline(rt.backend, rt.retrieval, rt.settings.retrieval, mode="dense"),
    "hybrid": lambda rt: HybridPipeline(rt.backend, rt.retrieval, rt.settings.retrieval, mode="hybrid"),
}


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


INDEX_INFO_TTL_S = 30.0
"""How long a process trusts what it read about an index (its embedder, its fusion weights)."""


class Runtime:
    """Lazily built backend, embedders and pipelines for one set of settings (one per process).

    Each index is searched with the configured embedder whose name the index records
    (:meth:`retrieval`); ``embedder`` given here replaces every configured one (tests, benchmarks).
    """

    def __init__(self, settings: Settings, *, backend: SearchBackend | None = None,
                 embedder: CachedEmbedder | None = None) -> None:
        self.settings = settings
        self._backend = backend
        self._fixed_embedder = embedder
        self._embedders: dict[EmbedderSettings, CachedEmbedder] = {}
        self._retrieval: dict[str, tuple[float, IndexRetrieval]] = {}
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
        """The default embedder (corpora of several or unknown languages)."""
        return self.embedder_for("")

    def embedder_for(self, language: str) -> CachedEmbedder:
        """The embedder a new index of a corpus in ``language`` gets (``"zh"``; ``"de,fr,it"`` or ``""``
        for the default one)."""
        if self._fixed_embedder is not None:
            return self._fixed_embedder
        cfg = self.settings.embedder.for_language(language)
        with self._lock:
            embedder = self._embedders.get(cfg)
            if embedder is None:
                embedder = self._embedders[cfg] = build_embedder(self.settings, language)
            return embedder

    def index_embedder(self, index: str, language: str | None = None) -> CachedEmbedder:
        """The embedder of ``index``: the configured one whose name the index records (the default one for
        an attached index, which records none). For an index that does not exist yet, pass the corpus
        ``language``: it then gets :meth:`embedder_for` that language.

        Raises:
            IndexCorrupt: when no configured embedder has the name the index records.
            IndexNotFound: when the index does not exist and no ``language`` was given.
        """
        if language is not None and not self.backend.exists(index):
            return self.embedder_for(language)
        recorded = self.backend.stats(index).embedder
        if not recorded:  # an attached index that lexsearch did not build: the default embedder
            return self.embedder_for("")
        candidates = ([("given", self._fixed_embedder)] if self._fixed_embedder is not None else
                      [(lang, self.embedder_for("" if lang == "default" else lang))
                       for lang, _ in self.settings.embedder.choices()])
        for _, embedder in candidates:
            if embedder.name == recorded:
                return embedder
        configured = ", ".join(f"{e.name} ({lang})" for lang, e in candidates)
        raise IndexCorrupt(f"index {index!r} was built with embedder {recorded}, but the settings configure "
                           f"{configured}; rebuild the index (`lexsearch index`) or configure {recorded} "
                           "(docs/EMBEDDERS.md)")

    def retrieval(self, index: str) -> IndexRetrieval:
        """The embedder and fusion weights of ``index`` (read from the index at most every
        :data:`INDEX_INFO_TTL_S` seconds).

        Raises:
            IndexCorrupt, IndexNotFound: see :meth:`index_embedder`.
        """
        now = time.monotonic()
        with self._lock:
            cached = self._retrieval.get(index)
        if cached is not None and now - cached[0] < INDEX_INFO_TTL_S:
            return cached[1]
        found = IndexRetrieval(self.index_embedder(index), self.fusion_weights(index))
        with self._lock:
            self._retrieval[index] = (now, found)
        return found

    def fusion_weights(self, index: str) -> FusionWeights:
        """The fusion weights of ``index``, by the precedence of :mod:`service.retrieval.weights`."""
        return FusionWeights.from_settings(self.settings.retrieval) or DEFAULT_WEIGHTS

    def forget_query_caches(self) -> None:
        """Forget cached query vectors, question terms and law predictions, so the next search pays
        for its own (benchmarks and calibration time each pipeline from cold query caches)."""
        from service.analysis.chain import forget_cached_terms
        from service.models import forget_recent_predictions

        with self._lock:
            embedders = [self._fixed_embedder] if self._fixed_embedder is not None else list(self._embedders.values())
        for embedder in embedders:
            embedder.clear_query_cache()
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
