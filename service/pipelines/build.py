"""The one place that turns :class:`~service.config.Settings` into objects.

Nothing else in the package decides which engine, embedder or LLM is in use.

Example::

    runtime = Runtime(load_settings())
    runtime.pipeline("hybrid").run(SearchRequest("deposit not returned", index="default"))
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable

from service.backends.base import SearchBackend
from service.config import Settings
from service.embeddings.base import Embedder
from service.embeddings.cache import CachedEmbedder
from service.errors import InvalidInput
from service.pipelines.base import Pipeline
from service.plugins import BACKENDS, EMBEDDERS, PIPELINES


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
