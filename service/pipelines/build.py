"""The one place that turns :class:`~service.config.Settings` into objects.

The backend and the embedder come from their plug-in tables; :class:`Runtime` builds (once) and
keeps every collaborator of the pipelines and the pipelines themselves. Nothing else in the
package decides which engine, embedder, model folder or LLM is in use.

Example::

    runtime = Runtime(load_settings())
    runtime.pipeline("hybrid").run(SearchRequest("deposit not returned", index="default"))
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable

from service.agents.factory import AgentFactory
from service.analysis.chain import forget_cached_terms
from service.backends.base import SearchBackend
from service.config import Settings
from service.embeddings.base import Embedder
from service.embeddings.cache import CachedEmbedder
from service.errors import InvalidInput
from service.lazy import built_once
from service.llm.client import LlmClient
from service.models import TrainedModels, forget_recent_predictions, load_models
from service.pipelines.base import Pipeline
from service.plugins import BACKENDS, EMBEDDERS, PIPELINES
from service.rerank.base import RerankerParts
from service.rerank.cross_encoder import CrossEncoderReranker
from service.routing.laws import ClassifierLawCounter
from service.routing.router import LawCounter


def build_backend(settings: Settings) -> SearchBackend:
    """The configured search backend, from :data:`~service.plugins.BACKENDS` (clients connect lazily)."""
    return BACKENDS.entry(settings.backend.kind).load().from_config(settings)


def build_embedder(settings: Settings) -> CachedEmbedder:
    """The configured embedder, from :data:`~service.plugins.EMBEDDERS`, wrapped in the disk cache."""
    cfg = settings.embedder
    inner: Embedder = EMBEDDERS.entry(cfg.kind).load().from_config(cfg)
    return CachedEmbedder(inner, cfg.cache_dir, batch_size=cfg.batch_size)


PipelineFactory = Callable[["Runtime"], Pipeline]
_EXTRA_PIPELINES: dict[str, PipelineFactory] = {}


def register_pipeline(name: str, factory: PipelineFactory) -> None:
    """Make an extra pipeline available by name, next to those of :data:`~service.plugins.PIPELINES`.

    For modules named in ``api.pipeline_modules`` (see :func:`import_pipeline_modules`).

    Raises:
        ValueError: for a name of the built-in table.
    """
    if name in PIPELINES:
        raise ValueError(f"pipeline {name!r} is built in")
    _EXTRA_PIPELINES[name] = factory


def import_pipeline_modules(settings: Settings) -> None:
    """Import ``api.pipeline_modules`` (they register extra pipelines by name)."""
    for module in settings.api.pipeline_modules:
        importlib.import_module(module)


def pipeline_names() -> list[str]:
    """Every pipeline a request may name: the built-in table, then the registered extras."""
    return [*PIPELINES.names(), *sorted(_EXTRA_PIPELINES)]


class Runtime:
    """Every collaborator of the pipelines, built lazily, once, for one set of settings (one per process).

    The backend, the embedder, the trained models, the LLM client, the agents (rewriters and
    planner), the rerankers' parts, the law counter of routing, and the pipelines by name. Pipelines
    get what they use from here (``Class.from_runtime``) and never build any of it themselves.
    """

    def __init__(self, settings: Settings, *, backend: SearchBackend | None = None,
                 embedder: CachedEmbedder | None = None) -> None:
        self.settings = settings
        self._backend = backend
        self._embedder = embedder
        self._llm: LlmClient | None = None
        self._agents: AgentFactory | None = None
        self._cross_encoder: CrossEncoderReranker | None = None
        self._pipelines: dict[str, Pipeline] = {}
        self._lock = threading.RLock()

    @property
    def backend(self) -> SearchBackend:
        """The configured search backend."""
        return built_once(self, "_backend", self._lock, lambda: build_backend(self.settings))

    @property
    def embedder(self) -> CachedEmbedder:
        """The configured embedder, with the disk cache."""
        return built_once(self, "_embedder", self._lock, lambda: build_embedder(self.settings))

    def models(self) -> TrainedModels | None:
        """The trained models of ``index.model_dir`` (``None`` without one), read once per process and
        again when the folder's manifest changes.

        Raises:
            ConfigError: for an unreadable folder, or one trained with another embedder.
        """
        models = load_models(self.settings.index.model_dir, compile_trees=self.settings.agents.compiled_trees)
        if models is not None:
            models.check_embedder(self.embedder.name)
        return models

    def llm_client(self) -> LlmClient | None:
        """The one LLM client of the process (``None`` when no LLM is configured)."""
        if not self.settings.llm.enabled:
            return None
        return built_once(self, "_llm", self._lock, lambda: LlmClient(self.settings.llm))

    @property
    def agents(self) -> AgentFactory:
        """The rewriters and the planner (LLM ones when an LLM is configured)."""
        return built_once(self, "_agents", self._lock, lambda: AgentFactory(self.llm_client()))

    def cross_encoder(self) -> CrossEncoderReranker:
        """The cross-encoder of ``agents.cross_encoder_path`` (its model loads on first use)."""
        path = self.settings.agents.cross_encoder_path
        return built_once(self, "_cross_encoder", self._lock, lambda: CrossEncoderReranker(path))

    def reranker_parts(self) -> RerankerParts:
        """What the rerankers of :data:`~service.plugins.RERANKERS` are built from, but the trained model
        (each pipeline adds its own)."""
        cross_encoder = self.cross_encoder if self.settings.agents.cross_encoder_path else None
        return RerankerParts(llm=self.llm_client(), llm_candidates=self.settings.agents.llm_rerank_candidates,
                             cross_encoder=cross_encoder)

    def law_counter(self) -> LawCounter | None:
        """Routing's count of the laws a question touches, by the trained law classifier (``None``
        without a model folder)."""
        return ClassifierLawCounter(self.models) if self.settings.index.model_dir else None

    def forget_query_caches(self) -> None:
        """Forget cached query vectors, question terms and law predictions, so the next search pays
        for its own (benchmarks and calibration time each pipeline from cold query caches)."""
        self.embedder.clear_query_cache()
        forget_cached_terms()
        forget_recent_predictions()

    def pipeline(self, name: str) -> Pipeline:
        """The pipeline called ``name`` (built once per runtime).

        Raises:
            InvalidInput: for an unknown name (code ``unknown_pipeline``; the message lists the known ones).
        """
        with self._lock:
            pipe = self._pipelines.get(name)
            if pipe is None:
                pipe = self._build_pipeline(name)
                self._pipelines[name] = pipe
            return pipe

    def _build_pipeline(self, name: str) -> Pipeline:
        extra = _EXTRA_PIPELINES.get(name)
        if extra is not None:
            return extra(self)
        if name not in PIPELINES:
            raise InvalidInput(f"unknown pipeline {name!r}; use one of: {', '.join(pipeline_names())}",
                               code="unknown_pipeline")
        plugin = PIPELINES[name]
        return plugin.load().from_runtime(self, name=name, **plugin.options)
